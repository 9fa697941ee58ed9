# Drawn by enpu; run from this directory: gnuplot replay_slack.gp
set terminal pngcairo size 960,600 noenhanced font 'sans,10'
set output 'replay_slack.png'
set datafile missing 'NaN'
set grid
set title 'SLO slack per 5-minute window (Figure 5)'
set multiplot layout 2,1
set xlabel 'time of day (h)'
set ylabel 'SLO slack (%)'
set key outside right top
set title 'TTFT slack of the requests finished in the window (nodvfs)'
plot  'replay_slack.dat' using 1:2 with lines lw 2 title 'P1', \
     'replay_slack.dat' using 1:3 with lines lw 2 title 'P25', \
     'replay_slack.dat' using 1:4 with lines lw 2 title 'mean', \
     'replay_slack.dat' using 1:5 with lines lw 2 title 'P75', \
     'replay_slack.dat' using 1:6 with lines lw 2 title 'P99'
set title 'TPOT slack of the requests finished in the window (nodvfs)'
plot  'replay_slack.dat' using 1:7 with lines lw 2 title 'P1', \
     'replay_slack.dat' using 1:8 with lines lw 2 title 'P25', \
     'replay_slack.dat' using 1:9 with lines lw 2 title 'mean', \
     'replay_slack.dat' using 1:10 with lines lw 2 title 'P75', \
     'replay_slack.dat' using 1:11 with lines lw 2 title 'P99'
unset multiplot
