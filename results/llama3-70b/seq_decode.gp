# Drawn by enpu; run from this directory: gnuplot seq_decode.gp
set terminal pngcairo size 960,520 noenhanced font 'sans,10'
set output 'seq_decode.png'
set datafile missing 'NaN'
set grid
set title 'decode, enpu-all, batch 1: energy savings vs sequence length'
set xlabel 'sequence length (tokens)'
set ylabel 'energy savings vs NoDVFS (%)'
set key outside right top
set logscale x 2
plot  'seq_decode.dat' using 1:2 with linespoints lw 2 pt 7 title 'slack 0%', \
     'seq_decode.dat' using 1:3 with linespoints lw 2 pt 7 title 'slack 2%, 5%, 10%, 20%, 30% (identical)'
