# Drawn by enpu; run from this directory: gnuplot domains_decode.gp
set terminal pngcairo size 960,520 noenhanced font 'sans,10'
set output 'domains_decode.png'
set datafile missing 'NaN'
set grid
set title 'decode: energy savings vs NoDVFS (%) vs SLO slack (mean over buckets)'
# paper values: jobs/paper/paper-numbers.json figure 17 phase decode model llama3.1-405b policies enpu-3dom,enpu-4dom,enpu-all
set xlabel 'SLO slack (% of T_nodvfs)'
set ylabel 'energy savings vs NoDVFS (%)'
set key outside right top samplen 2
set offsets 0.3, 0.3, graph 0.05, graph 0.05
plot  'domains_decode.dat' using 1:2 with linespoints lw 2 pt 7 title 'enpu-3dom', \
     'domains_decode.dat' using 1:3 with linespoints lw 2 pt 7 title 'enpu-4dom', \
     'domains_decode.dat' using 1:4 with linespoints lw 2 pt 7 title 'enpu-all', \
    'domains_decode.dat' using 1:(column(2) + 0.8):(column(2) + 7.7) with filledcurves fs transparent solid 0.18 noborder lc 2 title 'paper §4.6: enpu-4dom = enpu-3dom+0.8–7.7', \
    'domains_decode.dat' using 1:(column(3) + 2.3):(column(3) + 3.5) with filledcurves fs transparent solid 0.18 noborder lc 3 title 'paper §4.6: enpu-all = enpu-4dom+2.3–3.5'
