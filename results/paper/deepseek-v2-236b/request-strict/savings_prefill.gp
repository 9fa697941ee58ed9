# Drawn by enpu; run from this directory: gnuplot savings_prefill.gp
set terminal pngcairo size 960,560 noenhanced font 'sans,10'
set output 'savings_prefill.png'
set datafile missing 'NaN'
set grid
set title 'prefill: energy savings vs SLO slack (mean over buckets, bars min..max)'
set xlabel 'SLO slack (% of T_nodvfs)'
set ylabel 'energy savings vs NoDVFS (%)'
set key outside right top
set offsets 0.3, 0.3, 0, 0
plot  'savings_prefill.dat' using 1:2:3:4 with yerrorlines lw 2 pt 7 title 'dvfs-c', \
     'savings_prefill.dat' using 1:5:6:7 with yerrorlines lw 2 pt 7 title 'dvfs-c-ms', \
     'savings_prefill.dat' using 1:8:9:10 with yerrorlines lw 2 pt 7 title 'dvfs-c-walk', \
     'savings_prefill.dat' using 1:11:12:13 with yerrorlines lw 2 pt 7 title 'enpu-3dom', \
     'savings_prefill.dat' using 1:14:15:16 with yerrorlines lw 2 pt 7 title 'enpu-4dom', \
     'savings_prefill.dat' using 1:17:18:19 with yerrorlines lw 2 pt 7 title 'enpu-all', \
     'savings_prefill.dat' using 1:20:21:22 with yerrorlines lw 2 pt 7 title 'enpu-all@shadow=0', \
     'savings_prefill.dat' using 1:23:24:25 with yerrorlines lw 2 pt 7 title 'enpu-all@shadow=1', \
     'savings_prefill.dat' using 1:26:27:28 with yerrorlines lw 2 pt 7 title 'enpu-all@shadow=16', \
     'savings_prefill.dat' using 1:29:30:31 with yerrorlines lw 2 pt 7 title 'enpu-all@shadow=2', \
     'savings_prefill.dat' using 1:32:33:34 with yerrorlines lw 2 pt 7 title 'enpu-all@shadow=32', \
     'savings_prefill.dat' using 1:35:36:37 with yerrorlines lw 2 pt 7 title 'enpu-all@shadow=8', \
     'savings_prefill.dat' using 1:38:39:40 with yerrorlines lw 2 pt 7 title 'enpu-c', \
     'savings_prefill.dat' using 1:41:42:43 with yerrorlines lw 2 pt 7 title 'enpu-ms', \
     'savings_prefill.dat' using 1:44:45:46 with yerrorlines lw 2 pt 7 title 'ideal', \
     'savings_prefill.dat' using 1:47:48:49 with yerrorlines lw 2 pt 7 title 'nodvfs', \
     'savings_prefill.dat' using 1:50:51:52 with yerrorlines lw 2 pt 7 title 'pg', \
     'savings_prefill.dat' using 1:53:54:55 with yerrorlines lw 2 pt 7 title 'pg+enpu-all', \
     'savings_prefill.dat' using 1:56:57:58 with yerrorlines lw 2 pt 7 title 'uniform'
