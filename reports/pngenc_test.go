package reports

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"testing"

	"gonum.org/v1/plot/vg"
)

// FuzzEncodePNG holds encodePNG to image/png: what it writes decodes (by
// image/png) to the very pixels it was given, and an image that is not
// opaque is image/png's own encoding, byte for byte. The seeds run with
// go test.
func FuzzEncodePNG(f *testing.F) {
	f.Add([]byte{}, uint8(1), uint8(1), false)
	f.Add([]byte{255, 0, 0, 0, 255, 0}, uint8(3), uint8(2), false)
	f.Add(bytes.Repeat([]byte{1, 2, 3, 4, 5, 6, 7}, 300), uint8(40), uint8(30), false)
	f.Add(bytes.Repeat([]byte{200, 10}, 5000), uint8(255), uint8(200), false)
	f.Add([]byte{9, 8, 7, 6, 5, 4, 3, 2, 1}, uint8(5), uint8(5), true)
	f.Fuzz(func(t *testing.T, data []byte, w, h uint8, translucent bool) {
		if w == 0 || h == 0 {
			return
		}
		img := image.NewRGBA(image.Rect(0, 0, int(w), int(h)))
		for i := range img.Pix {
			switch {
			case i%4 != 3:
				if len(data) > 0 {
					img.Pix[i] = data[(i-i/4)%len(data)]
				}
			case translucent && i/4 == len(img.Pix)/8:
				img.Pix[i] = 128 // one pixel half transparent
				for c := i - 3; c < i; c++ {
					img.Pix[c] /= 2 // premultiplied
				}
			default:
				img.Pix[i] = 255
			}
		}
		got, err := encodePNG(img)
		if err != nil {
			t.Fatal(err)
		}
		if translucent {
			want, err := stdPNG(img)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatal("a translucent image is not image/png's encoding")
			}
			return
		}
		back, err := png.Decode(bytes.NewReader(got))
		if err != nil {
			t.Fatal(err)
		}
		if back.Bounds() != img.Bounds() {
			t.Fatalf("bounds %v, want %v", back.Bounds(), img.Bounds())
		}
		for y := range int(h) {
			for x := range int(w) {
				if g, w := color.RGBAModel.Convert(back.At(x, y)), img.At(x, y); g != w {
					t.Fatalf("pixel (%d,%d) is %v, want %v", x, y, g, w)
				}
			}
		}
	})
}

// TestEncodePNGOfAnImageInABiggerOne: a sub-image (its pixels not at the
// start of Pix, its rows shorter than Pix's stride) is encoded as itself.
func TestEncodePNGOfAnImageInABiggerOne(t *testing.T) {
	big := image.NewRGBA(image.Rect(0, 0, 50, 40))
	for i := range big.Pix {
		big.Pix[i] = byte(i * 7)
		if i%4 == 3 {
			big.Pix[i] = 255
		}
	}
	for _, r := range []image.Rectangle{image.Rect(10, 5, 30, 25), image.Rect(0, 0, 1, 40), image.Rect(49, 39, 50, 40)} {
		sub := big.SubImage(r).(*image.RGBA)
		b, err := encodePNG(sub)
		if err != nil {
			t.Fatal(err)
		}
		back, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if back.Bounds().Dx() != r.Dx() || back.Bounds().Dy() != r.Dy() {
			t.Fatalf("%v: bounds %v", r, back.Bounds())
		}
		for y := range r.Dy() {
			for x := range r.Dx() {
				if g, w := color.RGBAModel.Convert(back.At(x, y)), sub.At(r.Min.X+x, r.Min.Y+y); g != w {
					t.Fatalf("%v: pixel (%d,%d) is %v, want %v", r, x, y, g, w)
				}
			}
		}
	}
}

// TestPlotBackgroundIsWhite: a plot's image is white wherever nothing is
// drawn, its corners and the legend column's edge included.
func TestPlotBackgroundIsWhite(t *testing.T) {
	p := newPlot("title", "x", "y")
	b, err := renderPNG(p, []legendEntry{{"hold", rectThumb{colHold}}}, 4*vg.Inch, 2*vg.Inch)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	r := img.Bounds()
	for _, pt := range []image.Point{r.Min, {r.Max.X - 1, r.Min.Y}, {r.Min.X, r.Max.Y - 1}, r.Max.Sub(image.Pt(1, 1)), {r.Max.X - 1, r.Dy() / 2}} {
		if c := color.RGBAModel.Convert(img.At(pt.X, pt.Y)); c != (color.RGBA{255, 255, 255, 255}) {
			t.Errorf("pixel %v is %v, want white", pt, c)
		}
	}
}
