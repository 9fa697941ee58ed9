# Drawn by enpu; run from this directory: gnuplot sweep.gp
set terminal pngcairo size 960,1200 noenhanced font 'sans,10'
set output 'sweep.png'
set datafile missing 'NaN'
set grid
set title 'load sweep'
set multiplot layout 4,1
set xlabel 'request rate (x the trace)'
set logscale x 2
set key outside right top
set rmargin at screen 0.70
set title 'SLO attainment'
set ylabel 'SLO attainment (%)'
plot  'sweep.dat' using 1:2 with linespoints lw 2 title 'dvfs-c-walk', \
     'sweep.dat' using 1:9 with linespoints lw 2 title 'enpu-all', \
     'sweep.dat' using 1:16 with linespoints lw 2 title 'enpu-c', \
     'sweep.dat' using 1:23 with linespoints lw 2 title 'nodvfs'
set title 'energy savings vs nodvfs, busy batches only'
set ylabel 'savings (%)'
plot  'sweep.dat' using 1:3 with linespoints lw 2 title 'dvfs-c-walk', \
     'sweep.dat' using 1:10 with linespoints lw 2 title 'enpu-all', \
     'sweep.dat' using 1:17 with linespoints lw 2 title 'enpu-c'
set title 'energy savings vs nodvfs, with idle chips and KV transfers'
set ylabel 'savings (%)'
plot  'sweep.dat' using 1:4 with linespoints lw 2 title 'dvfs-c-walk', \
     'sweep.dat' using 1:11 with linespoints lw 2 title 'enpu-all', \
     'sweep.dat' using 1:18 with linespoints lw 2 title 'enpu-c'
set title 'pool utilisation'
set ylabel 'utilisation (%)'
plot  'sweep.dat' using 1:26 with linespoints lw 2  title 'prefill busy', \
     'sweep.dat' using 1:27 with linespoints lw 2  title 'decode slots filled', \
     'sweep.dat' using 1:28 with linespoints lw 2 dt 2 title 'prefill busy, busiest window', \
     'sweep.dat' using 1:29 with linespoints lw 2 dt 2 title 'decode slots, busiest window'
unset multiplot
