# Drawn by enpu; run from this directory: gnuplot freq_util_decode.gp
set terminal pngcairo size 960,560 noenhanced font 'sans,10'
set output 'freq_util_decode.png'
set datafile missing 'NaN'
set grid
set title 'decode, batch 48, seq 4096, enpu-all at 30% slack: chosen frequency vs utilisation at peak'
set xlabel 'utilisation at peak, NoDVFS (% busy)'
set ylabel 'chosen frequency (fraction of peak)'
set xrange [0:100]
set yrange [0:1.05]
set key outside right top
plot  'freq_util_decode.dat' using 2:7 with points pt 5 ps 1.4 title 'SA', \
     'freq_util_decode.dat' using 3:8 with points pt 7 ps 1.4 title 'VU', \
     'freq_util_decode.dat' using 4:9 with points pt 9 ps 1.4 title 'SRAM', \
     'freq_util_decode.dat' using 5:10 with points pt 11 ps 1.4 title 'HBM', \
     'freq_util_decode.dat' using 6:11 with points pt 13 ps 1.4 title 'ICI'
