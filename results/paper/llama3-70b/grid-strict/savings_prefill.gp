# Drawn by enpu; run from this directory: gnuplot savings_prefill.gp
set terminal pngcairo size 960,560 noenhanced font 'sans,10'
set output 'savings_prefill.png'
set datafile missing 'NaN'
set grid
set title 'prefill: energy savings vs SLO slack (mean over buckets, bars min..max)'
# paper values: jobs/paper/paper-numbers.json figure 11 phase prefill model llama3-70b policies nodvfs,dvfs-c-walk,enpu-c,enpu-all
set xlabel 'SLO slack (% of T_nodvfs)'
set ylabel 'energy savings vs NoDVFS (%)'
set key outside right top
set offsets 0.3, 0.3, graph 0.05, graph 0.05
plot  'savings_prefill.dat' using 1:11:12:13 with yerrorlines lw 2 pt 7 title 'nodvfs', \
     'savings_prefill.dat' using 1:2:3:4 with yerrorlines lw 2 pt 7 title 'dvfs-c-walk', \
     'savings_prefill.dat' using 1:8:9:10 with yerrorlines lw 2 pt 7 title 'enpu-c', \
     'savings_prefill.dat' using 1:5:6:7 with yerrorlines lw 2 pt 7 title 'enpu-all', \
    'savings_prefill.dat' index 0 every ::0::0 using (0):(0 + 16.9) with points pt 13 ps 2 lc rgb 'black' title 'paper §4 (1): enpu-all, model mean', \
    'savings_prefill.dat' index 0 every ::0::0 using (10):(0 + 22.9) with points pt 13 ps 2 lc rgb 'black' notitle
