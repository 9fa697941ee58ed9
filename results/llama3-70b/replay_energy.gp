# Drawn by enpu; run from this directory: gnuplot replay_energy.gp
set terminal pngcairo size 960,1120 noenhanced font 'sans,10'
set output 'replay_energy.png'
set datafile missing 'NaN'
set grid
set title 'replay per 5-minute window (Figure 22)'
set multiplot layout 4,1
set xlabel 'time of day (h)'
set key outside right top
set rmargin at screen 0.74
set yrange [98.819:100.107]
set title 'prefill SLO attainment (TTFT) of the requests finished in the window'
set ylabel 'SLO attainment (%)'
plot  'replay_energy.dat' using 1:2 with lines lw 2 lc 1  title 'dvfs-c-walk', \
     'replay_energy.dat' using 1:8 with lines lw 2 lc 2  title 'enpu-all', \
     'replay_energy.dat' using 1:14 with lines lw 2 lc 3  title 'enpu-c', \
     'replay_energy.dat' using 1:20 with lines lw 2 lc 4  title 'nodvfs'
set yrange [99.9385:100.05]
set title 'decode SLO attainment (TPOT) of the requests finished in the window'
set ylabel 'SLO attainment (%)'
plot  'replay_energy.dat' using 1:3 with lines lw 2 lc 1  title 'dvfs-c-walk', \
     'replay_energy.dat' using 1:9 with lines lw 2 lc 2  title 'enpu-all', \
     'replay_energy.dat' using 1:15 with lines lw 2 lc 3  title 'enpu-c', \
     'replay_energy.dat' using 1:21 with lines lw 2 lc 4  title 'nodvfs'
set autoscale y
set title 'prefill energy savings vs nodvfs (solid: busy batches only, dashed: with idle chips)'
set ylabel 'savings (%)'
plot  'replay_energy.dat' using 1:4 with lines lw 2 lc 1  title 'dvfs-c-walk busy', \
     'replay_energy.dat' using 1:10 with lines lw 2 lc 2  title 'enpu-all busy', \
     'replay_energy.dat' using 1:16 with lines lw 2 lc 3  title 'enpu-c busy', \
     'replay_energy.dat' using 1:6 with lines lw 2 lc 1 dt 2 title 'dvfs-c-walk with idle', \
     'replay_energy.dat' using 1:12 with lines lw 2 lc 2 dt 2 title 'enpu-all with idle', \
     'replay_energy.dat' using 1:18 with lines lw 2 lc 3 dt 2 title 'enpu-c with idle'
set title 'decode energy savings vs nodvfs (solid: busy batches only, dashed: with idle chips)'
set ylabel 'savings (%)'
plot  'replay_energy.dat' using 1:5 with lines lw 2 lc 1  title 'dvfs-c-walk busy', \
     'replay_energy.dat' using 1:11 with lines lw 2 lc 2  title 'enpu-all busy', \
     'replay_energy.dat' using 1:17 with lines lw 2 lc 3  title 'enpu-c busy', \
     'replay_energy.dat' using 1:7 with lines lw 2 lc 1 dt 2 title 'dvfs-c-walk with idle', \
     'replay_energy.dat' using 1:13 with lines lw 2 lc 2 dt 2 title 'enpu-all with idle', \
     'replay_energy.dat' using 1:19 with lines lw 2 lc 3 dt 2 title 'enpu-c with idle'
unset multiplot
