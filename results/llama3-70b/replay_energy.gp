# Drawn by `enpu report`; run from this directory: gnuplot replay_energy.gp
set terminal pngcairo size 960,900 noenhanced font 'sans,10'
set output 'replay_energy.png'
set datafile missing 'NaN'
set grid
set title 'replay'
set multiplot layout 3,1
set xlabel 'time (hours from the start of the trace)'
set key outside right top
set title 'mean cluster power per 5-minute window'
set ylabel 'power (kW)'
plot  'replay_energy.dat' using 1:2 with lines lw 2 title 'dvfs-c', \
     'replay_energy.dat' using 1:5 with lines lw 2 title 'enpu-all', \
     'replay_energy.dat' using 1:8 with lines lw 2 title 'enpu-c', \
     'replay_energy.dat' using 1:11 with lines lw 2 title 'nodvfs'
set title 'energy savings vs nodvfs per window'
set ylabel 'energy savings (%)'
plot  'replay_energy.dat' using 1:3 with lines lw 2 title 'dvfs-c', \
     'replay_energy.dat' using 1:6 with lines lw 2 title 'enpu-all', \
     'replay_energy.dat' using 1:9 with lines lw 2 title 'enpu-c'
set title 'SLO attainment of the requests finished in the window'
set ylabel 'SLO attainment (%)'
plot  'replay_energy.dat' using 1:4 with lines lw 2 title 'dvfs-c', \
     'replay_energy.dat' using 1:7 with lines lw 2 title 'enpu-all', \
     'replay_energy.dat' using 1:10 with lines lw 2 title 'enpu-c', \
     'replay_energy.dat' using 1:13 with lines lw 2 title 'nodvfs'
unset multiplot
