# Drawn by enpu; run from this directory: gnuplot sweep_clock.states_x_vu.shadow_vregs.gp
set terminal pngcairo size 960,840 noenhanced font 'sans,10'
set output 'sweep_clock.states_x_vu.shadow_vregs.png'
set datafile missing 'NaN'
set grid
set title 'chip sweep: clock.states x vu.shadow_vregs, 30 % slack'
set multiplot layout 2,2
unset key
set xtics ('4' 0, '9' 1, '17' 2, '34' 3)
set xrange [-0.5:3.5]
set ytics ('0' 0, '1' 1, '4' 2)
set yrange [-0.5:2.5]
set xlabel 'clock.states (states)'
set ylabel 'vu.shadow_vregs (registers)'
unset cblabel
set title 'enpu-all, prefill'
plot 'sweep_clock.states_x_vu.shadow_vregs.dat' using 1:2:3 with image
set cblabel 'saving vs NoDVFS (%)'
set title 'dvfs-c-walk, prefill'
plot 'sweep_clock.states_x_vu.shadow_vregs.dat' using 1:2:4 with image
unset cblabel
set title 'enpu-all, decode'
plot 'sweep_clock.states_x_vu.shadow_vregs.dat' using 1:2:5 with image
set cblabel 'saving vs NoDVFS (%)'
set title 'dvfs-c-walk, decode'
plot 'sweep_clock.states_x_vu.shadow_vregs.dat' using 1:2:6 with image
unset multiplot
