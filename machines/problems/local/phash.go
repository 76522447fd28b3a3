package local

import (
	"fmt"
	"image"
	"math"
	"math/bits"
	"sort"
	"strconv"
)

// PHash returns the perceptual hash of an image as 16 lower-case
// hexadecimal digits: the image is reduced to 32x32 grey levels by
// averaging, transformed by a 2-D DCT, and each of the 64 lowest-frequency
// coefficients gives one bit, set when it is above their median. Images that
// look alike have hashes a few bits apart; see HammingDistance.
func PHash(img image.Image) string {
	const n = 32
	var grey [n][n]float64
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if w == 0 || h == 0 {
		return fmt.Sprintf("%016x", uint64(0))
	}
	for y := 0; y < n; y++ {
		y0 := b.Min.Y + y*h/n
		y1 := max(y0+1, b.Min.Y+(y+1)*h/n)
		for x := 0; x < n; x++ {
			x0 := b.Min.X + x*w/n
			x1 := max(x0+1, b.Min.X+(x+1)*w/n)
			var sum float64
			for sy := y0; sy < y1; sy++ {
				for sx := x0; sx < x1; sx++ {
					r, g, bl, _ := img.At(sx, sy).RGBA()
					sum += 0.299*float64(r) + 0.587*float64(g) + 0.114*float64(bl)
				}
			}
			grey[y][x] = sum / float64((y1-y0)*(x1-x0)) / 257
		}
	}
	var cos [8][n]float64
	for u := 0; u < 8; u++ {
		for x := 0; x < n; x++ {
			cos[u][x] = math.Cos(float64(2*x+1) * float64(u) * math.Pi / (2 * n))
		}
	}
	coef := make([]float64, 0, 64)
	for v := 0; v < 8; v++ {
		for u := 0; u < 8; u++ {
			var s float64
			for y := 0; y < n; y++ {
				var row float64
				for x := 0; x < n; x++ {
					row += grey[y][x] * cos[u][x]
				}
				s += row * cos[v][y]
			}
			coef = append(coef, s)
		}
	}
	sorted := append([]float64(nil), coef...)
	sort.Float64s(sorted)
	median := (sorted[31] + sorted[32]) / 2
	var hash uint64
	for i, c := range coef {
		if c > median {
			hash |= 1 << uint(63-i)
		}
	}
	return fmt.Sprintf("%016x", hash)
}

// HammingDistance returns the number of bits in which two perceptual hashes
// differ, or an error when either is not 16 hexadecimal digits.
func HammingDistance(a, b string) (int, error) {
	x, err := parseHash(a)
	if err != nil {
		return 0, err
	}
	y, err := parseHash(b)
	if err != nil {
		return 0, err
	}
	return bits.OnesCount64(x ^ y), nil
}

func parseHash(s string) (uint64, error) {
	if len(s) != 16 {
		return 0, fmt.Errorf("local: perceptual hash %q: want 16 hexadecimal digits", s)
	}
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("local: perceptual hash %q: %w", s, err)
	}
	return v, nil
}
