# Drawn by enpu; run from this directory: gnuplot granularity_prefill.gp
set terminal pngcairo size 960,520 noenhanced font 'sans,10'
set output 'granularity_prefill.png'
set datafile missing 'NaN'
set grid
set title 'prefill: energy savings vs NoDVFS (%) vs SLO slack (mean over buckets)'
# paper values: jobs/paper/paper-numbers.json figure 16 phase prefill model deepseek-v2-236b policies dvfs-c,enpu-all
set xlabel 'SLO slack (% of T_nodvfs)'
set ylabel 'energy savings vs NoDVFS (%)'
set key outside right top samplen 2
set offsets 0.3, 0.3, graph 0.05, graph 0.05
plot  'granularity_prefill.dat' using 1:2 with linespoints lw 2 pt 7 title 'dvfs-c', \
     'granularity_prefill.dat' using 1:3 with linespoints lw 2 pt 7 title 'enpu-all'
