# Drawn by enpu; run from this directory: gnuplot gating_decode.gp
set terminal pngcairo size 960,520 noenhanced font 'sans,10'
set output 'gating_decode.png'
set datafile missing 'NaN'
set grid
set title 'decode: energy savings vs NoDVFS (%) vs SLO slack (mean over buckets)'
# paper values: jobs/paper/paper-numbers.json figure 21 phase decode model llama3.1-405b policies nodvfs,pg,enpu-all,pg+enpu-all
set xlabel 'SLO slack (% of T_nodvfs)'
set ylabel 'energy savings vs NoDVFS (%)'
set key outside right top samplen 2
set offsets 0.3, 0.3, graph 0.05, graph 0.05
plot  'gating_decode.dat' using 1:2 with linespoints lw 2 pt 7 title 'nodvfs', \
     'gating_decode.dat' using 1:3 with linespoints lw 2 pt 7 title 'pg', \
     'gating_decode.dat' using 1:4 with linespoints lw 2 pt 7 title 'enpu-all', \
     'gating_decode.dat' using 1:5 with linespoints lw 2 pt 7 title 'pg+enpu-all', \
    'gating_decode.dat' using 1:(0 + 31.5) with lines dt 2 lw 2 lc 4 title 'paper §4.7: pg+enpu-all up to 31.5 %', \
    'gating_decode.dat' using (abs($1 - 0) < 1e-6 ? $1 : NaN):(column(4) + 0) with points pt 9 ps 2 lc rgb 'black' title 'paper §4.7: pg > enpu-all'
