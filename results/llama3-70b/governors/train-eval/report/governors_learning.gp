# Drawn by enpu; run from this directory: gnuplot governors_learning.gp
set terminal pngcairo size 960,420 noenhanced font 'sans,10'
set output 'governors_learning.png'
set datafile missing 'NaN'
set grid
set title 'PELM learning curve'
set xlabel 'time of day (h)'
set ylabel 'mean reward per decision (dimensionless)'
set key outside right top
set title 'reward = -(energy share of TDP + w x late share) / (1 + w), per 5-minute window'
plot  'governors.dat' using 1:8 with linespoints lw 2 lc 1 title 'pelm-lossless'
