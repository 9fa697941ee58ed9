# Drawn by enpu; run from this directory: gnuplot seq_prefill.gp
set terminal pngcairo size 960,520 noenhanced font 'sans,10'
set output 'seq_prefill.png'
set datafile missing 'NaN'
set grid
set title 'prefill, enpu-all, batch 1: energy savings vs sequence length'
set xlabel 'sequence length (tokens)'
set ylabel 'energy savings vs NoDVFS (%)'
set key outside right top
set logscale x 2
plot  'seq_prefill.dat' using 1:2 with linespoints lw 2 pt 7 title 'slack 0%', \
     'seq_prefill.dat' using 1:3 with linespoints lw 2 pt 7 title 'slack 2%', \
     'seq_prefill.dat' using 1:4 with linespoints lw 2 pt 7 title 'slack 5%', \
     'seq_prefill.dat' using 1:5 with linespoints lw 2 pt 7 title 'slack 10%', \
     'seq_prefill.dat' using 1:6 with linespoints lw 2 pt 7 title 'slack 20%', \
     'seq_prefill.dat' using 1:7 with linespoints lw 2 pt 7 title 'slack 30%'
