# Drawn by enpu; run from this directory: gnuplot sweep_ivr.step_ns.gp
set terminal pngcairo size 960,900 noenhanced font 'sans,10'
set output 'sweep_ivr.step_ns.png'
set datafile missing 'NaN'
set grid
set title 'chip sweep: ivr.step_ns'
set multiplot layout 2,1
set key outside right top
set rmargin at screen 0.72
set grid
set logscale x 10
set xlabel 'ivr.step_ns (ns per step)'
set ylabel 'saving vs NoDVFS (%)'
set title 'prefill'
plot  'sweep_ivr.step_ns.dat' using 1:2 with linespoints lw 2 title 'enpu-all, 0 % slack', \
     'sweep_ivr.step_ns.dat' using 1:3 with linespoints lw 2 title 'enpu-all, 30 % slack', \
     'sweep_ivr.step_ns.dat' using 1:4 with linespoints lw 2 title 'dvfs-c-walk, 0 % slack', \
     'sweep_ivr.step_ns.dat' using 1:5 with linespoints lw 2 title 'dvfs-c-walk, 30 % slack', \
     'sweep_ivr.step_ns.dat' using 1:6 with linespoints lw 2 title 'enpu-c, 0 % slack', \
     'sweep_ivr.step_ns.dat' using 1:7 with linespoints lw 2 title 'enpu-c, 30 % slack'
set title 'decode'
plot  'sweep_ivr.step_ns.dat' using 1:8 with linespoints lw 2 title 'enpu-all, 0 % slack', \
     'sweep_ivr.step_ns.dat' using 1:9 with linespoints lw 2 title 'enpu-all, 30 % slack', \
     'sweep_ivr.step_ns.dat' using 1:10 with linespoints lw 2 title 'dvfs-c-walk, 0 % slack', \
     'sweep_ivr.step_ns.dat' using 1:11 with linespoints lw 2 title 'dvfs-c-walk, 30 % slack', \
     'sweep_ivr.step_ns.dat' using 1:12 with linespoints lw 2 title 'enpu-c, 0 % slack', \
     'sweep_ivr.step_ns.dat' using 1:13 with linespoints lw 2 title 'enpu-c, 30 % slack'
unset multiplot
