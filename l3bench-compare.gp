set terminal pngcairo size 1200,480 font ',11'
set output 'l3bench-compare.png'
set multiplot layout 1,2 title 'l3cache vs fio (device limit) vs file-per-key, GB/s by object size'
set termoption noenhanced
set logscale x 2
set xlabel 'object size (KiB)'
set ylabel 'GB/s'
set grid
set key below
set yrange [0:*]
set xrange [48:5600]
set xtics (64, 256, 1024, 4096)
set title 'get'
plot './l3bench-compare.dat' u 1:2 w lp lw 2 t 'fio, 1 job', '' u 1:8 w lp lw 2 dt 2 t 'fio, l3cache shape', '' u 1:3 w lp lw 2 t 'l3cache', '' u 1:4 w lp lw 2 t 'file per key'
set title 'put'
plot './l3bench-compare.dat' u 1:5 w lp lw 2 t 'fio, 1 job', '' u 1:9 w lp lw 2 dt 2 t 'fio, l3cache shape', '' u 1:6 w lp lw 2 t 'l3cache', '' u 1:7 w lp lw 2 t 'file per key'
unset multiplot
