#!/bin/sh
# Regenerates the fixtures of this folder with Debian 12's ffmpeg 5.1 (libsvtav1 1.4.1, libx264,
# its native PNG and AAC encoders). Run it here: sh make-fixtures.sh. The encoders' bitstreams
# depend on their versions; the tests check decoded values, not bytes, so a regenerated set
# passes too. tiny-v3-cam.mp4 is not made here (see README).
set -eu
ff="ffmpeg -hide_banner -loglevel error -y"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# Frame N (0-based) is one flat colour, RGB (6+12N, 60+8N, 200-8N).
colours="format=gbrp,geq=r='6+12*N':g='60+8*N':b='200-8*N'"

# AV1 with LeRobot's encoder settings (RGBEncoderConfig): 12 frames, 64x64, 10 fps, a keyframe
# every 2 frames; colour tags left unset (limited range, BT.601), as LeRobot's files are.
$ff -f lavfi -i "color=black:s=64x64:r=10:d=1.2,$colours" \
    -c:v libsvtav1 -pix_fmt yuv420p -g 2 -crf 30 -preset 12 -svtav1-params fast-decode=0 \
    gradient-av1.mp4

# H.264 with B-frames (decode order differs from display order), a keyframe every 6 frames,
# 15 frames 48x32 at 30 fps, converted and tagged BT.709 limited range.
$ff -f lavfi -i "color=black:s=48x32:r=30:d=0.5,$colours,scale=out_color_matrix=bt709:out_range=tv,format=yuv420p" \
    -c:v libx264 -x264-params keyint=6:min-keyint=6:bframes=2:b-adapt=0:b-pyramid=0:scenecut=0 \
    -crf 18 -colorspace bt709 -color_primaries bt709 -color_trc bt709 -color_range tv \
    gradient-h264.mp4

# An MP4 container with no video stream.
$ff -f lavfi -i "sine=frequency=440:duration=0.1" -c:a aac -b:a 32k audio-only.m4a

# PNGs of a 5x3 image with pixel (x, y) = (50x+7y, 250-30x-50y, (37xy+11) mod 256), alpha
# 255-20x; the 16-bit one carries those values in its high bytes (low bytes: noise); the
# 1-bit one is a checkerboard, white where x+y is odd.
LC_ALL=C awk -v dir="$tmp" 'BEGIN {
  for (y = 0; y < 3; y++) for (x = 0; x < 5; x++) {
    r = 50*x + 7*y; g = 250 - 30*x - 50*y; b = (37*x*y + 11) % 256; a = 255 - 20*x
    printf "%c%c%c", r, g, b > (dir "/rgb24.raw")
    printf "%c%c%c%c", r, g, b, a > (dir "/rgba.raw")
    printf "%c", r > (dir "/gray.raw")
    printf "%c%c", r, a > (dir "/ya8.raw")
    printf "%c%c%c%c%c%c", r, (13*x+5*y+r) % 256, g, (13*x+5*y+g) % 256, b, (13*x+5*y+b) % 256 > (dir "/rgb48be.raw")
    printf "%c", ((x + y) % 2) ? 255 : 0 > (dir "/mono.raw")
  } }'
raw() { echo "-f rawvideo -pix_fmt $1 -s 5x3 -i $tmp/$2.raw"; }
$ff $(raw rgb24 rgb24) image-rgb.png
$ff $(raw rgba rgba) -pix_fmt rgba image-rgba.png
$ff $(raw gray gray) -pix_fmt gray image-gray.png
$ff $(raw ya8 ya8) -pix_fmt ya8 image-gray-alpha.png
$ff $(raw rgb48be rgb48be) -pix_fmt rgb48be image-rgb16.png
$ff $(raw gray mono) -pix_fmt monob image-1bit.png
# A palette PNG with a transparent entry (tRNS), every colour exact (15 colours, no dither).
$ff $(raw rgb24 rgb24) -vf "split[a][b];[a]palettegen=max_colors=32:reserve_transparent=1:stats_mode=full[p];[b][p]paletteuse=dither=none" \
    -pix_fmt pal8 image-palette.png
