# Drawn by enpu; run from this directory: gnuplot granularity_prefill.gp
set terminal pngcairo size 960,520 noenhanced font 'sans,10'
set output 'granularity_prefill.png'
set datafile missing 'NaN'
set grid
set title 'prefill: energy savings vs NoDVFS (%) vs SLO slack (mean over buckets)'
# paper values: jobs/paper/paper-numbers.json figure 16 phase prefill model llama3-70b policies dvfs-c,dvfs-c-ms,enpu-all,enpu-ms
set xlabel 'SLO slack (% of T_nodvfs)'
set ylabel 'energy savings vs NoDVFS (%)'
set key outside right top samplen 2
set offsets 0.3, 0.3, graph 0.05, graph 0.05
plot  'granularity_prefill.dat' using 1:2 with linespoints lw 2 pt 7 title 'dvfs-c', \
     'granularity_prefill.dat' using 1:3 with linespoints lw 2 pt 7 title 'dvfs-c-ms', \
     'granularity_prefill.dat' using 1:4 with linespoints lw 2 pt 7 title 'enpu-all', \
     'granularity_prefill.dat' using 1:5 with linespoints lw 2 pt 7 title 'enpu-ms', \
    'granularity_prefill.dat' using 1:(column(5) + 0.6):(column(5) + 6.3) with filledcurves fs transparent solid 0.18 noborder lc 3 title 'paper §4.6: enpu-all = enpu-ms+0.6–6.3', \
    'granularity_prefill.dat' using 1:(column(3) + 4.4):(column(3) + 9.6) with filledcurves fs transparent solid 0.18 noborder lc 4 title 'paper §4.6: enpu-ms = dvfs-c-ms+4.4–9.6'
