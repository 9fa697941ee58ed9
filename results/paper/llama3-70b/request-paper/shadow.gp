# Drawn by enpu; run from this directory: gnuplot shadow.gp
set terminal pngcairo size 960,520 noenhanced font 'sans,10'
set output 'shadow.png'
set datafile missing 'NaN'
set grid
set title 'slowdown at 0 % slack vs VU shadow registers (mean over buckets)'
# paper values: jobs/paper/paper-numbers.json figure 15 phase both model llama3-70b policies enpu-all@shadow=0,enpu-all@shadow=1,enpu-all@shadow=2,enpu-all,enpu-all@shadow=8,enpu-all@shadow=16,enpu-all@shadow=32,enpu-all
set xlabel 'shadow vector registers (count)'
set ylabel 'time over NoDVFS (%)'
set key outside right top samplen 2
set offsets 0.3, 0.3, graph 0.05, graph 0.05
plot  'shadow.dat' using 1:2 with linespoints lw 2 pt 7 title 'prefill', \
     'shadow.dat' using 1:3 with linespoints lw 2 pt 7 title 'decode', \
    'shadow.dat' index 0 every ::0::0 using (4):(0 + 4) with points pt 11 ps 2 lc rgb 'black' title 'paper §4.5: enpu-all below 4 %', \
    'shadow.dat' index 0 every ::0::0 using (32):(0 + 0.5) with points pt 11 ps 2 lc rgb 'black' title 'paper §4.5: enpu-all@shadow=32 below 0.5 %'
