# Drawn by enpu; run from this directory: gnuplot figure20.gp
set terminal pngcairo size 960,1080 noenhanced font 'sans,10'
set output 'figure20.png'
set datafile missing 'NaN'
set grid
set title ''
# paper values: jobs/paper/paper-numbers.json figure 20 phase prefill model deepseek-v3-671b policies dvfs-c-walk,enpu-all,enpu-c,nodvfs
set multiplot layout 3,1 title 'deepseek-v3-671b prefill batch 1 seq 4096'
set logscale x 2
set lmargin 12
set rmargin at screen 0.72
set xlabel 'expert capacity factor (x the mean expert load)'
set key outside right top font ',8'
set style fill transparent solid 0.15 noborder
set ylabel 'energy saving vs NoDVFS (%)'
set title 'plans for the true load (band: min..max over slacks)' font ',9'
plot 'figure20.dat' index 0 using 1:3:4 with filledcurves lc 1 notitle, 'figure20.dat' index 0 using 1:2 with linespoints lc 1 title 'dvfs-c-walk', 'figure20.dat' index 1 using 1:3:4 with filledcurves lc 2 notitle, 'figure20.dat' index 1 using 1:2 with linespoints lc 2 title 'enpu-all', 'figure20.dat' index 2 using 1:3:4 with filledcurves lc 3 notitle, 'figure20.dat' index 2 using 1:2 with linespoints lc 3 title 'enpu-c', 'figure20.dat' index 3 using 1:3:4 with filledcurves lc 4 notitle, 'figure20.dat' index 3 using 1:2 with linespoints lc 4 title 'nodvfs'
set ylabel 'energy saving vs NoDVFS (%)'
set title 'worst-case plans run on the true load (mean over slacks)' font ',9'
plot 'figure20.dat' index 0 using 1:5 with linespoints dt 2 lc 1 title 'dvfs-c-walk', 'figure20.dat' index 1 using 1:5 with linespoints dt 2 lc 2 title 'enpu-all', 'figure20.dat' index 2 using 1:5 with linespoints dt 2 lc 3 title 'enpu-c', 'figure20.dat' index 3 using 1:5 with linespoints dt 2 lc 4 title 'nodvfs', \
    'figure20.dat' index 0 every ::0::0 using (1):(0 + 22) with points pt 13 ps 2 lc rgb 'black' notitle, \
    'figure20.dat' index 0 every ::0::0 using (1):(22):("    paper §4.6: enpu-all worst-case plan, factor 1: 22 %") with labels left font ',9' notitle
set ylabel 'saving lost by worst-case provisioning (points)'
set title 'plan for the true load minus worst-case plan (mean over slacks)' font ',9'
plot 'figure20.dat' index 0 using 1:8 with linespoints lc 1 notitle, 'figure20.dat' index 1 using 1:8 with linespoints lc 2 notitle, 'figure20.dat' index 2 using 1:8 with linespoints lc 3 notitle, 'figure20.dat' index 3 using 1:8 with linespoints lc 4 notitle, \
    'figure20.dat' index 0 every ::0::0 using (1):(0 + 4.3) with points pt 13 ps 2 lc rgb 'black' notitle, \
    'figure20.dat' index 0 every ::0::0 using (1):(4.3):("    paper §4.6: enpu-all saving lost, factor 1: 4.3 pts") with labels left font ',9' notitle
unset multiplot
