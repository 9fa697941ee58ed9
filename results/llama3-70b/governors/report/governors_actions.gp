# Drawn by enpu; run from this directory: gnuplot governors_actions.gp
set terminal pngcairo size 960,1100 noenhanced font 'sans,10'
set output 'governors_actions.png'
set datafile missing 'NaN'
set grid
set title 'online governors: actions per 5-minute window'
set multiplot layout 4,1
set xlabel 'time of day (h)'
set key outside right top
set rmargin at screen 0.8
set title 'prefill nodes: mean chip-wide V/f state (time-weighted)'
set ylabel 'V/f state (index)'
plot  'governors.dat' using 1:2 with lines lw 2 lc 1 title 'dvfs-c-walk+sd', \
     'governors.dat' using 1:9 with lines lw 2 lc 2 title 'enpu-all+sd', \
     'governors.dat' using 1:16 with lines lw 2 lc 3 title 'enpu-c+sd', \
     'governors.dat' using 1:23 with lines lw 2 lc 4 title 'nodvfs+sd', \
     'governors.dat' using 1:30 with lines lw 2 lc 5 title 'ondemand', \
     'governors.dat' using 1:37 with lines lw 2 lc 6 title 'pid', \
     'governors.dat' using 1:44 with lines lw 2 lc 7 title 'pelm', \
     'governors.dat' using 1:51 with lines lw 2 lc 8 title 'pelm-lossless'
set title 'decode nodes: mean chip-wide V/f state (time-weighted)'
set ylabel 'V/f state (index)'
plot  'governors.dat' using 1:3 with lines lw 2 lc 1 title 'dvfs-c-walk+sd', \
     'governors.dat' using 1:10 with lines lw 2 lc 2 title 'enpu-all+sd', \
     'governors.dat' using 1:17 with lines lw 2 lc 3 title 'enpu-c+sd', \
     'governors.dat' using 1:24 with lines lw 2 lc 4 title 'nodvfs+sd', \
     'governors.dat' using 1:31 with lines lw 2 lc 5 title 'ondemand', \
     'governors.dat' using 1:38 with lines lw 2 lc 6 title 'pid', \
     'governors.dat' using 1:45 with lines lw 2 lc 7 title 'pelm', \
     'governors.dat' using 1:52 with lines lw 2 lc 8 title 'pelm-lossless'
set title 'decode time spent in speculation rounds'
set ylabel 'share (%)'
plot  'governors.dat' using 1:4 with lines lw 2 lc 1 title 'dvfs-c-walk+sd', \
     'governors.dat' using 1:11 with lines lw 2 lc 2 title 'enpu-all+sd', \
     'governors.dat' using 1:18 with lines lw 2 lc 3 title 'enpu-c+sd', \
     'governors.dat' using 1:25 with lines lw 2 lc 4 title 'nodvfs+sd', \
     'governors.dat' using 1:32 with lines lw 2 lc 5 title 'ondemand', \
     'governors.dat' using 1:39 with lines lw 2 lc 6 title 'pid', \
     'governors.dat' using 1:46 with lines lw 2 lc 7 title 'pelm', \
     'governors.dat' using 1:53 with lines lw 2 lc 8 title 'pelm-lossless'
set title 'mean draft exit depth while speculating'
set ylabel 'depth (layers)'
plot  'governors.dat' using 1:5 with lines lw 2 lc 1 title 'dvfs-c-walk+sd', \
     'governors.dat' using 1:12 with lines lw 2 lc 2 title 'enpu-all+sd', \
     'governors.dat' using 1:19 with lines lw 2 lc 3 title 'enpu-c+sd', \
     'governors.dat' using 1:26 with lines lw 2 lc 4 title 'nodvfs+sd', \
     'governors.dat' using 1:33 with lines lw 2 lc 5 title 'ondemand', \
     'governors.dat' using 1:40 with lines lw 2 lc 6 title 'pid', \
     'governors.dat' using 1:47 with lines lw 2 lc 7 title 'pelm', \
     'governors.dat' using 1:54 with lines lw 2 lc 8 title 'pelm-lossless'
unset multiplot
