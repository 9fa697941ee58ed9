# Drawn by enpu; run from this directory: gnuplot shadow.gp
set terminal pngcairo size 960,520 noenhanced font 'sans,10'
set output 'shadow.png'
set datafile missing 'NaN'
set grid
set title 'slowdown at 0 % slack vs VU shadow registers (mean over buckets)'
set xlabel 'shadow vector registers (count)'
set ylabel 'time over NoDVFS (%)'
set key outside right top
set offsets 0.3, 0.3, 0, 0
plot  'shadow.dat' using 1:2 with linespoints lw 2 pt 7 title 'prefill', \
     'shadow.dat' using 1:3 with linespoints lw 2 pt 7 title 'decode'
