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
plot  'governors.dat' using 1:2 with lines lw 2 lc 1 title 'pelm-lossless'
set title 'decode nodes: mean chip-wide V/f state (time-weighted)'
set ylabel 'V/f state (index)'
plot  'governors.dat' using 1:3 with lines lw 2 lc 1 title 'pelm-lossless'
set title 'decode time spent in speculation rounds'
set ylabel 'share (%)'
plot  'governors.dat' using 1:4 with lines lw 2 lc 1 title 'pelm-lossless'
set title 'mean draft exit depth while speculating'
set ylabel 'depth (layers)'
plot  'governors.dat' using 1:5 with lines lw 2 lc 1 title 'pelm-lossless'
unset multiplot
