# Drawn by enpu; run from this directory: gnuplot replay_energy.gp
set terminal pngcairo size 960,2240 noenhanced font 'sans,10'
set output 'replay_energy.png'
set datafile missing 'NaN'
set grid
set title 'replay per 5-minute window (Figure 22)'
set multiplot layout 8,1
set xlabel 'time of day (h)'
set key outside right top
set rmargin at screen 0.74
set yrange [0:105]
set title 'prefill SLO attainment (TTFT) of the requests finished in the window: 100 % in every window, every policy'
set ylabel 'SLO attainment (%)'
plot  'replay_energy.dat' using 1:2 with lines lw 2 lc 1  title 'dvfs-c-walk', \
     'replay_energy.dat' using 1:8 with lines lw 2 lc 2  title 'dvfs-c-walk+sd', \
     'replay_energy.dat' using 1:14 with lines lw 2 lc 3  title 'enpu-all', \
     'replay_energy.dat' using 1:20 with lines lw 2 lc 4  title 'enpu-all+sd', \
     'replay_energy.dat' using 1:26 with lines lw 2 lc 5  title 'enpu-c', \
     'replay_energy.dat' using 1:32 with lines lw 2 lc 6  title 'enpu-c+sd'
set yrange [0:105]
set title 'prefill SLO attainment (TTFT) of the requests finished in the window: 100 % in every window, every policy'
set ylabel 'SLO attainment (%)'
plot  'replay_energy.dat' using 1:38 with lines lw 2 lc 7  title 'nodvfs', \
     'replay_energy.dat' using 1:44 with lines lw 2 lc 8  title 'nodvfs+sd', \
     'replay_energy.dat' using 1:50 with lines lw 2 lc 9  title 'ondemand', \
     'replay_energy.dat' using 1:56 with lines lw 2 lc 10  title 'pelm', \
     'replay_energy.dat' using 1:62 with lines lw 2 lc 11  title 'pelm-lossless', \
     'replay_energy.dat' using 1:68 with lines lw 2 lc 12  title 'pid'
set yrange [0:105]
set title 'decode SLO attainment (TPOT) of the requests finished in the window: 100 % in every window, every policy'
set ylabel 'SLO attainment (%)'
plot  'replay_energy.dat' using 1:3 with lines lw 2 lc 1  title 'dvfs-c-walk', \
     'replay_energy.dat' using 1:9 with lines lw 2 lc 2  title 'dvfs-c-walk+sd', \
     'replay_energy.dat' using 1:15 with lines lw 2 lc 3  title 'enpu-all', \
     'replay_energy.dat' using 1:21 with lines lw 2 lc 4  title 'enpu-all+sd', \
     'replay_energy.dat' using 1:27 with lines lw 2 lc 5  title 'enpu-c', \
     'replay_energy.dat' using 1:33 with lines lw 2 lc 6  title 'enpu-c+sd'
set yrange [0:105]
set title 'decode SLO attainment (TPOT) of the requests finished in the window: 100 % in every window, every policy'
set ylabel 'SLO attainment (%)'
plot  'replay_energy.dat' using 1:39 with lines lw 2 lc 7  title 'nodvfs', \
     'replay_energy.dat' using 1:45 with lines lw 2 lc 8  title 'nodvfs+sd', \
     'replay_energy.dat' using 1:51 with lines lw 2 lc 9  title 'ondemand', \
     'replay_energy.dat' using 1:57 with lines lw 2 lc 10  title 'pelm', \
     'replay_energy.dat' using 1:63 with lines lw 2 lc 11  title 'pelm-lossless', \
     'replay_energy.dat' using 1:69 with lines lw 2 lc 12  title 'pid'
set autoscale y
set title 'prefill energy savings vs nodvfs (solid: busy batches only)'
set ylabel 'savings (%)'
plot  'replay_energy.dat' using 1:4 with lines lw 2 lc 1  title 'dvfs-c-walk busy', \
     'replay_energy.dat' using 1:10 with lines lw 2 lc 2  title 'dvfs-c-walk+sd busy', \
     'replay_energy.dat' using 1:16 with lines lw 2 lc 3  title 'enpu-all busy', \
     'replay_energy.dat' using 1:22 with lines lw 2 lc 4  title 'enpu-all+sd busy', \
     'replay_energy.dat' using 1:28 with lines lw 2 lc 5  title 'enpu-c busy', \
     'replay_energy.dat' using 1:34 with lines lw 2 lc 6  title 'enpu-c+sd busy'
set title 'prefill energy savings vs nodvfs (solid: busy batches only)'
set ylabel 'savings (%)'
plot  'replay_energy.dat' using 1:46 with lines lw 2 lc 8  title 'nodvfs+sd busy', \
     'replay_energy.dat' using 1:52 with lines lw 2 lc 9  title 'ondemand busy', \
     'replay_energy.dat' using 1:58 with lines lw 2 lc 10  title 'pelm busy', \
     'replay_energy.dat' using 1:64 with lines lw 2 lc 11  title 'pelm-lossless busy', \
     'replay_energy.dat' using 1:70 with lines lw 2 lc 12  title 'pid busy'
set title 'decode energy savings vs nodvfs (solid: busy batches only)'
set ylabel 'savings (%)'
plot  'replay_energy.dat' using 1:5 with lines lw 2 lc 1  title 'dvfs-c-walk busy', \
     'replay_energy.dat' using 1:11 with lines lw 2 lc 2  title 'dvfs-c-walk+sd busy', \
     'replay_energy.dat' using 1:17 with lines lw 2 lc 3  title 'enpu-all busy', \
     'replay_energy.dat' using 1:23 with lines lw 2 lc 4  title 'enpu-all+sd busy', \
     'replay_energy.dat' using 1:29 with lines lw 2 lc 5  title 'enpu-c busy', \
     'replay_energy.dat' using 1:35 with lines lw 2 lc 6  title 'enpu-c+sd busy'
set title 'decode energy savings vs nodvfs (solid: busy batches only)'
set ylabel 'savings (%)'
plot  'replay_energy.dat' using 1:47 with lines lw 2 lc 8  title 'nodvfs+sd busy', \
     'replay_energy.dat' using 1:53 with lines lw 2 lc 9  title 'ondemand busy', \
     'replay_energy.dat' using 1:59 with lines lw 2 lc 10  title 'pelm busy', \
     'replay_energy.dat' using 1:65 with lines lw 2 lc 11  title 'pelm-lossless busy', \
     'replay_energy.dat' using 1:71 with lines lw 2 lc 12  title 'pid busy'
unset multiplot
