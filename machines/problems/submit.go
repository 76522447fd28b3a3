package problems

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// DefaultIntent is the intent of a submission that names none.
const DefaultIntent = "solve"

// SubmitProblem is the command that starts a RetrieveOrGenerate run, and the
// run's input JSON: exactly one of UploadSessionID, Text and URL.
type SubmitProblem struct {
	UploadSessionID string `json:"upload_session_id,omitempty"`
	Text            string `json:"text,omitempty"`
	URL             string `json:"url,omitempty"`
	MediaType       string `json:"media_type,omitempty"`
	// Intent is what the user wants done ("solve", "explain", ...); empty
	// means DefaultIntent. It is part of the idempotency key.
	Intent string `json:"intent,omitempty"`
}

// ErrInvalidSubmission is matched by errors.Is when a SubmitProblem cannot
// start a run.
var ErrInvalidSubmission = errors.New("invalid submission")

// Validate reports whether s names exactly one piece of content.
func (s SubmitProblem) Validate() error {
	n := 0
	for _, v := range []string{s.UploadSessionID, s.Text, s.URL} {
		if v != "" {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("%w: want exactly one of upload_session_id, text and url, have %d", ErrInvalidSubmission, n)
	}
	return nil
}

// Content returns the content the submission names.
func (s SubmitProblem) Content() Content {
	return Content{UploadSessionID: s.UploadSessionID, Text: s.Text, URL: s.URL, MediaType: s.MediaType}
}

// IntentOrDefault returns s.Intent, or DefaultIntent when it is empty.
func (s SubmitProblem) IntentOrDefault() string {
	if s.Intent == "" {
		return DefaultIntent
	}
	return s.Intent
}

// DecodeSubmission reads a run's input JSON and validates it.
func DecodeSubmission(input json.RawMessage) (SubmitProblem, error) {
	var s SubmitProblem
	if err := json.Unmarshal(input, &s); err != nil {
		return SubmitProblem{}, fmt.Errorf("%w: decode input: %w", ErrInvalidSubmission, err)
	}
	if err := s.Validate(); err != nil {
		return SubmitProblem{}, err
	}
	return s, nil
}

// ProblemSignature returns the signature that identifies a problem: the
// SHA-256, in lower-case hexadecimal, of its normalized text, or of
// "phash:" followed by its perceptual hash for an image without text. It is
// "" when both are empty.
func ProblemSignature(normalizedText, phash string) string {
	switch {
	case normalizedText != "":
		return sha256Hex(normalizedText)
	case phash != "":
		return sha256Hex("phash:" + phash)
	}
	return ""
}

// IdempotencyKey returns the key a RetrieveOrGenerate run is started with:
// the SHA-256, in lower-case hexadecimal, of the problem signature, the user
// id and the intent, concatenated.
func IdempotencyKey(problemSignature, userID, intent string) string {
	return sha256Hex(problemSignature + userID + intent)
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
