# Drawn by enpu; run from this directory: gnuplot figure14.gp
set terminal pngcairo size 960,760 noenhanced font 'sans,10'
set output 'figure14.png'
set datafile missing 'NaN'
set grid
set title 'Figure 14: compile time of one request on this machine (one core)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.7
set logscale y
set yrange [1e-4:1e5]
set ylabel 'compile time (s, log)'
set xtics rotate by -45 font ',8'
set bmargin 13
set key outside right top
plot 'figure14.dat' using 2:xtic(1) title 'operator level', '' using 3 title 'request level', 10 with lines dt 2 lw 1.5 lc rgb 'black' title 'paper: operator level < 10 s', 2400 with lines dt 3 lw 1.5 lc rgb 'black' title 'paper: one request < 2400 s'
