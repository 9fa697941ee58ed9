# Drawn by enpu; run from this directory: gnuplot gating_prefill.gp
set terminal pngcairo size 960,520 noenhanced font 'sans,10'
set output 'gating_prefill.png'
set datafile missing 'NaN'
set grid
set title 'prefill: energy savings vs NoDVFS (%) vs SLO slack (mean over buckets)'
# paper values: jobs/paper/paper-numbers.json figure 21 phase prefill model deepseek-v3-671b policies nodvfs,pg,enpu-all,pg+enpu-all
set xlabel 'SLO slack (% of T_nodvfs)'
set ylabel 'energy savings vs NoDVFS (%)'
set key outside right top samplen 2
set offsets 0.3, 0.3, graph 0.05, graph 0.05
plot  'gating_prefill.dat' using 1:2 with linespoints lw 2 pt 7 title 'nodvfs', \
     'gating_prefill.dat' using 1:3 with linespoints lw 2 pt 7 title 'pg', \
     'gating_prefill.dat' using 1:4 with linespoints lw 2 pt 7 title 'enpu-all', \
     'gating_prefill.dat' using 1:5 with linespoints lw 2 pt 7 title 'pg+enpu-all', \
    'gating_prefill.dat' using 1:(0 + 30) with lines dt 2 lw 2 lc 4 title 'paper §4.7: pg+enpu-all up to 30 %', \
    'gating_prefill.dat' using (abs($1 - 0) < 1e-6 ? $1 : NaN):(column(4) + 0) with points pt 9 ps 2 lc rgb 'black' title 'paper §4.7: pg > enpu-all'
