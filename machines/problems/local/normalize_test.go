package local

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/machines/problems"
)

func TestNormalizeText(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"Solve: 2x + 3 = 7.", "solve 2x+3=7"},
		{"  SOLVE 2X+3=7 ", "solve 2x+3=7"},
		{"What is 1,000 + 007.50?", "what is 1000+7.5"},
		{"Find x: x² − 5x + 6 = 0", "find x x^2-5x+6=0"},
		{"١٢٣ + ٤", "123+4"},
		{"１２ × ( 3 + 4 ) ÷ 2", "12*(3+4)/2"},
		{"x/2 = 3.0", "x/2=3"},
		{"2 (x + 1) = 4", "2(x+1)=4"},
		{"What's 15% of 80?", "what s 15% of 80"},
		{"Área del triángulo", "área del triángulo"},
		{"v1.2.0 and 0.50", "v1.2.0 and 0.5"},
		{"(1,2) and 10,5000", "(1 2) and 10 5000"},
		{"!!! ... ???", ""},
	}
	for _, tt := range tests {
		if got := NormalizeText(tt.in); got != tt.want {
			t.Errorf("NormalizeText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTopicTags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"solve 2x+3=7", []string{"algebra", "linear-equation"}},
		{"find x x^2-5x+6=0", []string{"algebra", "quadratic-equation"}},
		{"solve 3y-2>7", []string{"algebra", "inequality"}},
		{"12*(3+4)/2", []string{"arithmetic"}},
		{"area of a circle of radius 3", []string{"geometry"}},
		{"derivative of x^3", []string{"calculus"}},
		{"probability of 2 heads coin tossed twice", []string{"probability"}},
		{"what s 15% of 80", []string{"percentages"}},
		{"simplify the fraction 6/8", []string{"fractions"}},
		{"hello world", []string{}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, TopicTags(tt.in)); diff != "" {
			t.Errorf("TopicTags(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

// gradient draws a w×h image whose grey level grows from left to right,
// shifted by shift levels and with a bright square at (sx, sy) when sq > 0.
func gradient(w, h int, shift uint8, sx, sy, sq int) image.Image {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			g := uint8(x*200/w) + shift
			if sq > 0 && x >= sx && x < sx+sq && y >= sy && y < sy+sq {
				g = 255
			}
			img.Set(x, y, color.RGBA{g, g, g, 255})
		}
	}
	return img
}

// withDot returns a copy of img with a white size×size dot at (x, y).
func withDot(img image.Image, x0, y0, size int) image.Image {
	out := image.NewRGBA(img.Bounds())
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			out.Set(x, y, img.At(x, y))
		}
	}
	for y := y0; y < y0+size; y++ {
		for x := x0; x < x0+size; x++ {
			out.Set(x, y, color.RGBA{255, 255, 255, 255})
		}
	}
	return out
}

func encodePNG(t *testing.T, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestPHash(t *testing.T) {
	t.Parallel()
	base := gradient(64, 64, 0, 10, 10, 20)
	same := PHash(gradient(64, 64, 0, 10, 10, 20))
	brighter := PHash(gradient(64, 64, 3, 10, 10, 20))
	other := PHash(gradient(64, 64, 0, 40, 36, 20))
	h := PHash(base)
	if h != same {
		t.Errorf("PHash of the same image: %s and %s", h, same)
	}
	if len(h) != 16 {
		t.Errorf("PHash = %q, want 16 hexadecimal digits", h)
	}
	dotted := PHash(withDot(base, 48, 48, 3))
	for _, tt := range []struct {
		name  string
		other string
		want  int
	}{
		{"a brighter copy", brighter, 0},
		{"a copy with a small dot", dotted, 4},
		{"another image", other, 30},
	} {
		d, err := HammingDistance(h, tt.other)
		if err != nil {
			t.Fatal(err)
		}
		if d != tt.want {
			t.Errorf("distance to %s = %d, want %d", tt.name, d, tt.want)
		}
	}
	if _, err := HammingDistance(h, "xyz"); err == nil {
		t.Error("HammingDistance of a malformed hash: no error")
	}
}

type fixedOCR string

func (o fixedOCR) Recognize(context.Context, image.Image) (string, error) { return string(o), nil }

func TestNormalizer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	img := gradient(64, 64, 0, 10, 10, 20)
	uploads := &MemoryUploads{}
	uploads.Put("img", "image/png", encodePNG(t, img))
	uploads.Put("txt", "text/plain; charset=utf-8", []byte("Solve 2x + 3 = 7"))
	uploads.Put("bin", "text/plain", []byte{0xff, 0xfe})
	uploads.Put("bad", "image/png", []byte("not a png"))
	uploads.Put("pdf", "application/pdf", []byte("%PDF"))
	phash := PHash(img)
	tests := []struct {
		name string
		n    *Normalizer
		c    problems.Content
		want problems.Media
	}{
		{"text", &Normalizer{}, problems.Content{Text: "Solve: 2x + 3 = 7."},
			problems.Media{NormalizedText: "solve 2x+3=7", TopicTags: []string{"algebra", "linear-equation"}}},
		{"text of another type", &Normalizer{}, problems.Content{Text: "2+2", MediaType: "image/png"},
			problems.Media{RejectionReason: RejectUnsupportedMedia}},
		{"empty text", &Normalizer{}, problems.Content{Text: "?!"}, problems.Media{RejectionReason: RejectEmpty}},
		{"too long", &Normalizer{MaxTextLen: 5}, problems.Content{Text: "1+2+3+4"}, problems.Media{RejectionReason: RejectTooLarge}},
		{"nothing", &Normalizer{}, problems.Content{}, problems.Media{RejectionReason: RejectEmpty}},
		{"text upload", &Normalizer{Uploads: uploads}, problems.Content{UploadSessionID: "txt"},
			problems.Media{NormalizedText: "solve 2x+3=7", TopicTags: []string{"algebra", "linear-equation"}}},
		{"image without OCR", &Normalizer{Uploads: uploads}, problems.Content{UploadSessionID: "img"},
			problems.Media{PHash: phash, TopicTags: []string{}}},
		{"image with OCR", &Normalizer{Uploads: uploads, OCR: fixedOCR("12 + 30")}, problems.Content{UploadSessionID: "img"},
			problems.Media{NormalizedText: "12+30", PHash: phash, TopicTags: []string{"arithmetic"}}},
		{"unknown upload", &Normalizer{Uploads: uploads}, problems.Content{UploadSessionID: "nope"}, problems.Media{RejectionReason: RejectUploadNotFound}},
		{"no upload store", &Normalizer{}, problems.Content{UploadSessionID: "img"}, problems.Media{RejectionReason: RejectUploadNotFound}},
		{"invalid UTF-8", &Normalizer{Uploads: uploads}, problems.Content{UploadSessionID: "bin"}, problems.Media{RejectionReason: RejectInvalidText}},
		{"undecodable image", &Normalizer{Uploads: uploads}, problems.Content{UploadSessionID: "bad"}, problems.Media{RejectionReason: RejectUndecodableImage}},
		{"unsupported upload", &Normalizer{Uploads: uploads}, problems.Content{UploadSessionID: "pdf"}, problems.Media{RejectionReason: RejectUnsupportedMedia}},
		{"URL without fetcher", &Normalizer{}, problems.Content{URL: "https://example.com/p.png"}, problems.Media{RejectionReason: RejectURLUnsupported}},
	}
	for _, tt := range tests {
		got, err := tt.n.Normalize(ctx, tt.c)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}
