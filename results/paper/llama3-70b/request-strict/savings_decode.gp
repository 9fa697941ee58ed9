# Drawn by enpu; run from this directory: gnuplot savings_decode.gp
set terminal pngcairo size 960,560 noenhanced font 'sans,10'
set output 'savings_decode.png'
set datafile missing 'NaN'
set grid
set title 'decode: energy savings vs SLO slack (mean over buckets, bars min..max)'
# paper values: jobs/paper/paper-numbers.json figure 11 phase decode model llama3-70b policies nodvfs,dvfs-c,enpu-c,enpu-all,ideal
set xlabel 'SLO slack (% of T_nodvfs)'
set ylabel 'energy savings vs NoDVFS (%)'
set key outside right top
set offsets 0.3, 0.3, graph 0.05, graph 0.05
plot  'savings_decode.dat' using 1:47:48:49 with yerrorlines lw 2 pt 7 title 'nodvfs', \
     'savings_decode.dat' using 1:2:3:4 with yerrorlines lw 2 pt 7 title 'dvfs-c', \
     'savings_decode.dat' using 1:38:39:40 with yerrorlines lw 2 pt 7 title 'enpu-c', \
     'savings_decode.dat' using 1:17:18:19 with yerrorlines lw 2 pt 7 title 'enpu-all', \
     'savings_decode.dat' using 1:44:45:46 with yerrorlines lw 2 pt 7 title 'ideal', \
    'savings_decode.dat' index 0 every ::0::0 using (0):(0 + 18.6) with points pt 13 ps 2 lc rgb 'black' title 'paper §4 (1): enpu-all, model mean', \
    'savings_decode.dat' index 0 every ::0::0 using (10):(0 + 18.6) with points pt 13 ps 2 lc rgb 'black' notitle, \
    'savings_decode.dat' using 1:(0 + 9.2):(0 + 18.1) with filledcurves fs transparent solid 0.18 noborder lc 2 title 'paper §4.2: dvfs-c 9.2–18.1 %'
