package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // decoders for uploaded images
	_ "image/jpeg"
	_ "image/png"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/fsmgen/fsmgen/machines/problems"
)

// Rejection reasons of the Normalizer.
const (
	RejectEmpty            = "empty_content"
	RejectTooLarge         = "content_too_large"
	RejectUnsupportedMedia = "unsupported_media_type"
	RejectUploadNotFound   = "upload_not_found"
	RejectURLUnsupported   = "url_fetch_unsupported"
	RejectInvalidText      = "invalid_text_encoding"
	RejectUndecodableImage = "undecodable_image"
)

// DefaultMaxTextLen is the longest normalized text, in bytes, the
// Normalizer accepts unless told otherwise.
const DefaultMaxTextLen = 20000

// Upload is a file a user uploaded.
type Upload struct {
	MediaType string
	Data      []byte
}

// ErrUploadNotFound is matched by errors.Is when an upload session is unknown.
var ErrUploadNotFound = errors.New("upload not found")

// Uploads finds uploaded files by upload session id.
type Uploads interface {
	Upload(ctx context.Context, sessionID string) (Upload, error)
}

// MemoryUploads is an Uploads held in memory, safe for concurrent use.
type MemoryUploads struct {
	mu sync.RWMutex
	m  map[string]Upload
}

// Put stores an upload under sessionID.
func (u *MemoryUploads) Put(sessionID, mediaType string, data []byte) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m = make(map[string]Upload)
	}
	u.m[sessionID] = Upload{MediaType: mediaType, Data: bytes.Clone(data)}
}

// Upload returns the upload stored under sessionID.
func (u *MemoryUploads) Upload(_ context.Context, sessionID string) (Upload, error) {
	u.mu.RLock()
	defer u.mu.RUnlock()
	up, ok := u.m[sessionID]
	if !ok {
		return Upload{}, fmt.Errorf("upload session %q: %w", sessionID, ErrUploadNotFound)
	}
	return up, nil
}

// OCR recognizes the text of an image.
type OCR interface {
	Recognize(ctx context.Context, img image.Image) (string, error)
}

// Fetcher downloads the content a URL names.
type Fetcher interface {
	Fetch(ctx context.Context, url string) (Upload, error)
}

// Normalizer is a problems.Normalizer for text, text files and images.
// Text is canonicalized by NormalizeText and tagged by TopicTags; images get
// a perceptual hash (PHash) and, when OCR is set, their recognized text.
// Without Uploads every upload is rejected as not found; without Fetcher
// every URL is rejected as unsupported.
type Normalizer struct {
	Uploads Uploads
	OCR     OCR
	Fetcher Fetcher
	// MaxTextLen bounds the normalized text; 0 means DefaultMaxTextLen.
	MaxTextLen int
}

var _ problems.Normalizer = (*Normalizer)(nil)

// Normalize implements problems.Normalizer.
func (n *Normalizer) Normalize(ctx context.Context, c problems.Content) (problems.Media, error) {
	switch {
	case c.Text != "":
		if !isTextType(c.MediaType) {
			return rejected(RejectUnsupportedMedia), nil
		}
		return n.text(c.Text), nil
	case c.UploadSessionID != "":
		if n.Uploads == nil {
			return rejected(RejectUploadNotFound), nil
		}
		up, err := n.Uploads.Upload(ctx, c.UploadSessionID)
		if errors.Is(err, ErrUploadNotFound) {
			return rejected(RejectUploadNotFound), nil
		}
		if err != nil {
			return problems.Media{}, fmt.Errorf("local: read upload: %w", err)
		}
		if c.MediaType != "" {
			up.MediaType = c.MediaType
		}
		return n.file(ctx, up)
	case c.URL != "":
		if n.Fetcher == nil {
			return rejected(RejectURLUnsupported), nil
		}
		up, err := n.Fetcher.Fetch(ctx, c.URL)
		if err != nil {
			return problems.Media{}, fmt.Errorf("local: fetch %s: %w", c.URL, err)
		}
		return n.file(ctx, up)
	}
	return rejected(RejectEmpty), nil
}

func (n *Normalizer) file(ctx context.Context, up Upload) (problems.Media, error) {
	mt := mediaBase(up.MediaType)
	switch {
	case isTextType(mt):
		if !utf8.Valid(up.Data) {
			return rejected(RejectInvalidText), nil
		}
		return n.text(string(up.Data)), nil
	case mt == "image/png" || mt == "image/jpeg" || mt == "image/gif":
		img, _, err := image.Decode(bytes.NewReader(up.Data))
		if err != nil {
			return rejected(RejectUndecodableImage), nil
		}
		text := ""
		if n.OCR != nil {
			if text, err = n.OCR.Recognize(ctx, img); err != nil {
				return problems.Media{}, fmt.Errorf("local: ocr: %w", err)
			}
		}
		m := n.text(text)
		if m.RejectionReason == RejectEmpty {
			m = problems.Media{TopicTags: []string{}}
		}
		if m.Rejected() {
			return m, nil
		}
		m.PHash = PHash(img)
		return m, nil
	}
	return rejected(RejectUnsupportedMedia), nil
}

func (n *Normalizer) text(s string) problems.Media {
	if !utf8.ValidString(s) {
		return rejected(RejectInvalidText)
	}
	t := NormalizeText(s)
	max := n.MaxTextLen
	if max <= 0 {
		max = DefaultMaxTextLen
	}
	switch {
	case t == "":
		return rejected(RejectEmpty)
	case len(t) > max:
		return rejected(RejectTooLarge)
	}
	return problems.Media{NormalizedText: t, TopicTags: TopicTags(t)}
}

func rejected(reason string) problems.Media { return problems.Media{RejectionReason: reason} }

func mediaBase(mt string) string {
	if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = mt[:i]
	}
	return strings.ToLower(strings.TrimSpace(mt))
}

func isTextType(mt string) bool {
	switch mediaBase(mt) {
	case "", "text/plain", "text/markdown":
		return true
	}
	return false
}

// NormalizeText returns the canonical form of a problem's text, so that the
// same problem written differently normalizes to the same string:
//
//   - letters are lower-cased; digits of any script become ASCII digits;
//     superscript ² and ³ become ^2 and ^3; the minus sign and dashes become
//     '-', × and · become '*', ÷ becomes '/';
//   - the operators + - * / = ^ < > % and parentheses are kept, a '.' only
//     as a decimal point between digits, a ',' between a digit and exactly
//     three digits is a thousands separator and dropped; every other
//     punctuation or symbol is a space;
//   - numbers lose leading zeros ("007" is "7") and trailing zeros after the
//     decimal point ("2.50" is "2.5", "3.0" is "3");
//   - runs of spaces become one; spaces next to + - * / = ^ < >, after '(',
//     before ')', and between a number or ')' and '(' are dropped; the ends
//     are trimmed.
func NormalizeText(s string) string {
	// Pass 1: map runes.
	rs := make([]rune, 0, len(s))
	for _, r := range strings.ToLower(s) {
		switch {
		case r < utf8.RuneSelf && r >= '0' && r <= '9':
			rs = append(rs, r)
		case unicode.IsDigit(r):
			rs = append(rs, '0'+digitValue(r))
		case r == '²':
			rs = append(rs, '^', '2')
		case r == '³':
			rs = append(rs, '^', '3')
		case r == '−' || r == '–' || r == '—' || r == '‐' || r == '‑':
			rs = append(rs, '-')
		case r == '×' || r == '·' || r == '∙' || r == '⋅':
			rs = append(rs, '*')
		case r == '÷' || r == '∕':
			rs = append(rs, '/')
		case strings.ContainsRune("+-*/=^<>%().,", r):
			rs = append(rs, r)
		case unicode.IsLetter(r) || unicode.Is(unicode.Mn, r):
			rs = append(rs, r)
		default:
			rs = append(rs, ' ')
		}
	}
	// Pass 2: decimal points and thousands separators.
	isDigit := func(i int) bool { return i >= 0 && i < len(rs) && rs[i] >= '0' && rs[i] <= '9' }
	for i, r := range rs {
		switch r {
		case '.':
			if !isDigit(i-1) || !isDigit(i+1) {
				rs[i] = ' '
			}
		case ',':
			if isDigit(i-1) && isDigit(i+1) && isDigit(i+2) && isDigit(i+3) && !isDigit(i+4) {
				rs[i] = 0 // dropped below
			} else {
				rs[i] = ' '
			}
		}
	}
	var b strings.Builder
	for _, r := range rs {
		if r != 0 {
			b.WriteRune(r)
		}
	}
	// Pass 3: numbers, then spaces.
	out := normalizeNumbers(b.String())
	return foldSpaces(out)
}

// digitValue returns the value of a decimal digit of any script: digits
// come in runs of ten from zero, so the value is the distance from the start
// of the run, modulo ten.
func digitValue(r rune) rune {
	start := r
	for start > 0 && unicode.IsDigit(start-1) {
		start--
	}
	return (r - start) % 10
}

func normalizeNumbers(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] < '0' || s[i] > '9' {
			b.WriteByte(s[i])
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		intPart := strings.TrimLeft(s[i:j], "0")
		if intPart == "" {
			intPart = "0"
		}
		frac := ""
		if j+1 < len(s) && s[j] == '.' && s[j+1] >= '0' && s[j+1] <= '9' {
			k := j + 1
			for k < len(s) && s[k] >= '0' && s[k] <= '9' {
				k++
			}
			frac = strings.TrimRight(s[j+1:k], "0")
			j = k
		}
		b.WriteString(intPart)
		if frac != "" {
			b.WriteByte('.')
			b.WriteString(frac)
		}
		i = j
	}
	return b.String()
}

func isOperator(c byte) bool { return strings.IndexByte("+-*/=^<>%()", c) >= 0 }

// joins reports whether a space between the bytes last and first is
// dropped: next to a binary operator, inside parentheses, and before a
// parenthesis that multiplies ("2 (x+1)").
func joins(last, first byte) bool {
	binary := func(c byte) bool { return strings.IndexByte("+-*/=^<>", c) >= 0 }
	return binary(last) || binary(first) || last == '(' || first == ')' ||
		(first == '(' && (last == ')' || (last >= '0' && last <= '9')))
}

func foldSpaces(s string) string {
	var b strings.Builder
	var last byte
	for i, f := range strings.Fields(s) {
		if i > 0 && !joins(last, f[0]) {
			b.WriteByte(' ')
		}
		b.WriteString(f)
		last = f[len(f)-1]
	}
	return b.String()
}

// TopicTags returns the topic tags of a normalized text, sorted: "algebra"
// with "linear-equation" or "quadratic-equation" for an equation in a
// variable, "inequality", "geometry", "calculus", "probability",
// "percentages", "fractions", and "arithmetic" for a computation with
// numbers only.
func TopicTags(normalized string) []string {
	tags := map[string]bool{}
	words := map[string]bool{}
	for _, w := range strings.FieldsFunc(normalized, func(r rune) bool { return !unicode.IsLetter(r) }) {
		words[w] = true
	}
	hasWord := func(ws ...string) bool {
		for _, w := range ws {
			if words[w] {
				return true
			}
		}
		return false
	}
	variable := hasVariable(normalized)
	switch {
	case variable && strings.Contains(normalized, "="):
		tags["algebra"] = true
		if strings.Contains(normalized, "^2") {
			tags["quadratic-equation"] = true
		} else {
			tags["linear-equation"] = true
		}
	case variable && strings.ContainsAny(normalized, "<>"):
		tags["algebra"] = true
		tags["inequality"] = true
	}
	if hasWord("triangle", "triangles", "circle", "circles", "angle", "angles", "radius", "diameter", "area",
		"perimeter", "polygon", "rectangle", "square", "hypotenuse", "volume") {
		tags["geometry"] = true
	}
	if hasWord("derivative", "derivatives", "integral", "integrals", "limit", "limits", "differentiate", "integrate") {
		tags["calculus"] = true
	}
	if hasWord("probability", "dice", "die", "coin", "coins", "random", "chance") {
		tags["probability"] = true
	}
	if strings.Contains(normalized, "%") || hasWord("percent", "percentage") {
		tags["percentages"] = true
	}
	if hasWord("fraction", "fractions", "numerator", "denominator") {
		tags["fractions"] = true
	}
	if len(tags) == 0 && !variable && strings.ContainsAny(normalized, "0123456789") && strings.ContainsAny(normalized, "+-*/^") {
		tags["arithmetic"] = true
	}
	out := make([]string, 0, len(tags))
	for t := range tags {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// hasVariable reports whether the text has a one-letter word next to a
// digit or an operator ("2x", "x+1", "(y)") or one of x, y, z standing
// alone.
func hasVariable(s string) bool {
	rs := []rune(s)
	for i, r := range rs {
		if !unicode.IsLetter(r) {
			continue
		}
		prevLetter := i > 0 && unicode.IsLetter(rs[i-1])
		nextLetter := i+1 < len(rs) && unicode.IsLetter(rs[i+1])
		if prevLetter || nextLetter {
			continue
		}
		if r == 'x' || r == 'y' || r == 'z' {
			return true
		}
		near := func(j int) bool {
			return j >= 0 && j < len(rs) && (unicode.IsDigit(rs[j]) || (rs[j] < utf8.RuneSelf && isOperator(byte(rs[j]))))
		}
		if near(i-1) || near(i+1) {
			return true
		}
	}
	return false
}
