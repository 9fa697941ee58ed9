# Drawn by enpu; run from this directory: gnuplot freq_util_prefill.gp
set terminal pngcairo size 960,560 noenhanced font 'sans,10'
set output 'freq_util_prefill.png'
set datafile missing 'NaN'
set grid
set title 'prefill, batch 8, seq 5120, enpu-all at 30% slack: chosen frequency vs utilisation at peak'
set xlabel 'utilisation at peak, NoDVFS (% busy)'
set ylabel 'chosen frequency (fraction of peak)'
set xrange [0:100]
set yrange [0:1.05]
set key outside right top
plot  'freq_util_prefill.dat' using 2:7 with points pt 5 ps 1.4 title 'SA', \
     'freq_util_prefill.dat' using 3:8 with points pt 7 ps 1.4 title 'VU', \
     'freq_util_prefill.dat' using 4:9 with points pt 9 ps 1.4 title 'SRAM', \
     'freq_util_prefill.dat' using 5:10 with points pt 11 ps 1.4 title 'HBM', \
     'freq_util_prefill.dat' using 6:11 with points pt 13 ps 1.4 title 'ICI'
