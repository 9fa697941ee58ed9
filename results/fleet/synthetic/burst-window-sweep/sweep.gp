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
plot  'sweep.dat' using 1:2 with linespoints lw 2 title 'enpu-all', \
     'sweep.dat' using 1:9 with linespoints lw 2 title 'nodvfs', \
     'sweep.dat' using 1:16 with linespoints lw 2 title 'enpu-all+as', \
     'sweep.dat' using 1:23 with linespoints lw 2 title 'nodvfs+as', \
     'sweep.dat' using 1:30 with linespoints lw 2 title 'enpu-all+pas', \
     'sweep.dat' using 1:37 with linespoints lw 2 title 'nodvfs+pas'
set title 'energy savings vs nodvfs, busy batches only'
set ylabel 'savings (%)'
plot  'sweep.dat' using 1:3 with linespoints lw 2 title 'enpu-all', \
     'sweep.dat' using 1:17 with linespoints lw 2 title 'enpu-all+as', \
     'sweep.dat' using 1:24 with linespoints lw 2 title 'nodvfs+as', \
     'sweep.dat' using 1:31 with linespoints lw 2 title 'enpu-all+pas', \
     'sweep.dat' using 1:38 with linespoints lw 2 title 'nodvfs+pas'
set title 'energy savings vs nodvfs, with idle chips and KV transfers'
set ylabel 'savings (%)'
plot  'sweep.dat' using 1:4 with linespoints lw 2 title 'enpu-all', \
     'sweep.dat' using 1:18 with linespoints lw 2 title 'enpu-all+as', \
     'sweep.dat' using 1:25 with linespoints lw 2 title 'nodvfs+as', \
     'sweep.dat' using 1:32 with linespoints lw 2 title 'enpu-all+pas', \
     'sweep.dat' using 1:39 with linespoints lw 2 title 'nodvfs+pas'
set title 'pool utilisation'
set ylabel 'utilisation (%)'
plot  'sweep.dat' using 1:12 with linespoints lw 2  title 'prefill busy', \
     'sweep.dat' using 1:13 with linespoints lw 2  title 'decode slots filled', \
     'sweep.dat' using 1:14 with linespoints lw 2 dt 2 title 'prefill busy, busiest window', \
     'sweep.dat' using 1:15 with linespoints lw 2 dt 2 title 'decode slots, busiest window'
unset multiplot
