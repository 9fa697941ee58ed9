# Drawn by enpu; run from this directory: gnuplot regulator_loss_share_decode.gp
set terminal pngcairo size 960,520 noenhanced font 'sans,10'
set output 'regulator_loss_share_decode.png'
set datafile missing 'NaN'
set grid
set title 'decode: regulator loss (% of the plan energy) vs SLO slack (mean over buckets)'
set xlabel 'SLO slack (% of T_nodvfs)'
set ylabel 'regulator loss (% of the plan energy)'
set key outside right top
set offsets 0.3, 0.3, 0, 0
plot  'regulator_loss_share_decode.dat' using 1:2 with linespoints lw 2 pt 7 title 'dvfs-c-walk', \
     'regulator_loss_share_decode.dat' using 1:3 with linespoints lw 2 pt 7 title 'enpu-c', \
     'regulator_loss_share_decode.dat' using 1:4 with linespoints lw 2 pt 7 title 'enpu-all'
