# Drawn by enpu; run from this directory: gnuplot figure11_deepseek-v2-236b_paper.gp
set terminal pngcairo size 960,1000 noenhanced font 'sans,10'
set output 'figure11_deepseek-v2-236b_paper.png'
set datafile missing 'NaN'
set grid
set title 'Figure 11: deepseek-v2-236b, one request, budget mode paper'
unset title
set multiplot layout 3,2 title 'Figure 11: deepseek-v2-236b, one request, budget mode paper' margins 0.08, 0.98, 0.06, 0.87 spacing 0.1, 0.08
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set grid ytics
set ylabel 'energy saving (%)'
set title 'prefill: energy saving (%)'
unset xlabel
set key horizontal at screen 0.5, 0.95 center top font ',10' samplen 2 width 1
plot 'figure11_deepseek-v2-236b_paper.dat' index 0 using 2:xtic(sprintf('%g %%', $1)) title 'nodvfs', 'figure11_deepseek-v2-236b_paper.dat' index 0 using 5 title 'dvfs-c', 'figure11_deepseek-v2-236b_paper.dat' index 0 using 8 title 'enpu-c', 'figure11_deepseek-v2-236b_paper.dat' index 0 using 11 title 'enpu-all', 'figure11_deepseek-v2-236b_paper.dat' index 0 using 14 title 'ideal', 'figure11_deepseek-v2-236b_paper.dat' index 2 using 1:2 with points pt 9 ps 1.6 lc rgb 'black' title 'paper'
set ylabel 'energy saving (%)'
set title 'decode: energy saving (%)'
unset xlabel
unset key
plot 'figure11_deepseek-v2-236b_paper.dat' index 1 using 2:xtic(sprintf('%g %%', $1)) title 'nodvfs', 'figure11_deepseek-v2-236b_paper.dat' index 1 using 5 title 'dvfs-c', 'figure11_deepseek-v2-236b_paper.dat' index 1 using 8 title 'enpu-c', 'figure11_deepseek-v2-236b_paper.dat' index 1 using 11 title 'enpu-all', 'figure11_deepseek-v2-236b_paper.dat' index 1 using 14 title 'ideal', 'figure11_deepseek-v2-236b_paper.dat' index 3 using 1:2 with points pt 9 ps 1.6 lc rgb 'black' title 'paper'
set ylabel 'power saving (%)'
set title 'prefill: power saving (%)'
unset xlabel
unset key
plot 'figure11_deepseek-v2-236b_paper.dat' index 0 using 3:xtic(sprintf('%g %%', $1)) title 'nodvfs', 'figure11_deepseek-v2-236b_paper.dat' index 0 using 6 title 'dvfs-c', 'figure11_deepseek-v2-236b_paper.dat' index 0 using 9 title 'enpu-c', 'figure11_deepseek-v2-236b_paper.dat' index 0 using 12 title 'enpu-all', 'figure11_deepseek-v2-236b_paper.dat' index 0 using 15 title 'ideal'
set ylabel 'power saving (%)'
set title 'decode: power saving (%)'
unset xlabel
unset key
plot 'figure11_deepseek-v2-236b_paper.dat' index 1 using 3:xtic(sprintf('%g %%', $1)) title 'nodvfs', 'figure11_deepseek-v2-236b_paper.dat' index 1 using 6 title 'dvfs-c', 'figure11_deepseek-v2-236b_paper.dat' index 1 using 9 title 'enpu-c', 'figure11_deepseek-v2-236b_paper.dat' index 1 using 12 title 'enpu-all', 'figure11_deepseek-v2-236b_paper.dat' index 1 using 15 title 'ideal'
set ylabel 'overhead (% of T_nodvfs)'
set title 'prefill: overhead (% of T_nodvfs)'
set xlabel 'SLO slack (%)'
unset key
plot 'figure11_deepseek-v2-236b_paper.dat' index 0 using 4:xtic(sprintf('%g %%', $1)) title 'nodvfs', 'figure11_deepseek-v2-236b_paper.dat' index 0 using 7 title 'dvfs-c', 'figure11_deepseek-v2-236b_paper.dat' index 0 using 10 title 'enpu-c', 'figure11_deepseek-v2-236b_paper.dat' index 0 using 13 title 'enpu-all', 'figure11_deepseek-v2-236b_paper.dat' index 0 using 16 title 'ideal'
set ylabel 'overhead (% of T_nodvfs)'
set title 'decode: overhead (% of T_nodvfs)'
set xlabel 'SLO slack (%)'
unset key
plot 'figure11_deepseek-v2-236b_paper.dat' index 1 using 4:xtic(sprintf('%g %%', $1)) title 'nodvfs', 'figure11_deepseek-v2-236b_paper.dat' index 1 using 7 title 'dvfs-c', 'figure11_deepseek-v2-236b_paper.dat' index 1 using 10 title 'enpu-c', 'figure11_deepseek-v2-236b_paper.dat' index 1 using 13 title 'enpu-all', 'figure11_deepseek-v2-236b_paper.dat' index 1 using 16 title 'ideal'
unset multiplot
