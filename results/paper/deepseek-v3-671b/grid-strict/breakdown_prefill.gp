# Drawn by enpu; run from this directory: gnuplot breakdown_prefill.gp
set terminal pngcairo size 960,560 noenhanced font 'sans,10'
set output 'breakdown_prefill.png'
set datafile missing 'NaN'
set grid
set title 'prefill, batch 8, seq 5120: energy by component per policy and slack'
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.75
set bmargin 6
set xtics rotate by -40 scale 0 font ',8'
set ylabel 'energy per forward pass (mJ)'
set yrange [0:*]
set key outside right top
plot  'breakdown_prefill.dat' using 2:xtic(1) title 'SA', \
     'breakdown_prefill.dat' using 3 title 'VU', \
     'breakdown_prefill.dat' using 4 title 'SRAM', \
     'breakdown_prefill.dat' using 5 title 'HBM', \
     'breakdown_prefill.dat' using 6 title 'ICI', \
     'breakdown_prefill.dat' using 7 title 'FE', \
     'breakdown_prefill.dat' using 8 title 'other'
