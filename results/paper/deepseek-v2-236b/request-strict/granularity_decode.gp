# Drawn by enpu; run from this directory: gnuplot granularity_decode.gp
set terminal pngcairo size 960,520 noenhanced font 'sans,10'
set output 'granularity_decode.png'
set datafile missing 'NaN'
set grid
set title 'decode: energy savings vs NoDVFS (%) vs SLO slack (mean over buckets)'
# paper values: jobs/paper/paper-numbers.json figure 16 phase decode model deepseek-v2-236b policies dvfs-c,dvfs-c-ms,enpu-all,enpu-ms
set xlabel 'SLO slack (% of T_nodvfs)'
set ylabel 'energy savings vs NoDVFS (%)'
set key outside right top samplen 2
set offsets 0.3, 0.3, graph 0.05, graph 0.05
plot  'granularity_decode.dat' using 1:2 with linespoints lw 2 pt 7 title 'dvfs-c', \
     'granularity_decode.dat' using 1:3 with linespoints lw 2 pt 7 title 'dvfs-c-ms', \
     'granularity_decode.dat' using 1:4 with linespoints lw 2 pt 7 title 'enpu-all', \
     'granularity_decode.dat' using 1:5 with linespoints lw 2 pt 7 title 'enpu-ms', \
    'granularity_decode.dat' using 1:(column(5) + 0.6):(column(5) + 6.3) with filledcurves fs transparent solid 0.18 noborder lc 3 title 'paper §4.6: enpu-all = enpu-ms+0.6–6.3', \
    'granularity_decode.dat' using 1:(column(3) + 4.4):(column(3) + 9.6) with filledcurves fs transparent solid 0.18 noborder lc 4 title 'paper §4.6: enpu-ms = dvfs-c-ms+4.4–9.6'
