// Package local holds in-process adapters of the compliance workflow's
// services, for tests, the demo and development: a prequalifier, a
// screening provider, a notifier and an assessor driven by tables given at
// construction. Each counts its calls and honours idempotency keys as the
// real services are required to.
package local

import (
	"context"
	"fmt"
	"sync"

	"github.com/fsmgen/fsmgen/machines/compliance"
)

// Prequalifier fails the applicants listed in Fail, with the reason given.
type Prequalifier struct {
	Fail map[string]string
}

// Prequalify implements compliance.Prequalifier.
func (p *Prequalifier) Prequalify(_ context.Context, app compliance.Application) (compliance.Prequalification, error) {
	criteria := []string{"income at least 40x monthly rent", "occupancy within the unit's limit"}
	if reason, ok := p.Fail[app.ApplicantID]; ok {
		return compliance.Prequalification{Passed: false, Reason: reason, Criteria: criteria}, nil
	}
	return compliance.Prequalification{Passed: true, Reason: "all prequalification criteria met", Criteria: criteria}, nil
}

// Screening is a screening provider: Findings maps an applicant to the
// adverse findings of their check (none when absent). FailFirst makes the
// first FailFirst calls fail, as an unavailable provider does.
type Screening struct {
	Findings  map[string][]string
	FailFirst int

	mu      sync.Mutex
	calls   int
	reports map[string]compliance.ScreeningReport
}

// Check implements compliance.ScreeningProvider.
func (s *Screening) Check(_ context.Context, req compliance.ScreeningRequest) (compliance.ScreeningReport, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.calls <= s.FailFirst {
		return compliance.ScreeningReport{}, fmt.Errorf("screening provider unavailable (call %d)", s.calls)
	}
	if r, ok := s.reports[req.IdempotencyKey]; ok {
		return r, nil
	}
	f := s.Findings[req.ApplicantID]
	r := compliance.ScreeningReport{ReportID: fmt.Sprintf("report-%s", req.ApplicationID), AdverseInfo: len(f) > 0, Findings: append([]string{}, f...)}
	if s.reports == nil {
		s.reports = map[string]compliance.ScreeningReport{}
	}
	s.reports[req.IdempotencyKey] = r
	return r, nil
}

// Calls returns the number of calls so far, failed ones included.
func (s *Screening) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// Notifier records the notifications it delivers, once per key.
type Notifier struct {
	mu   sync.Mutex
	sent []compliance.Notification
	keys map[string]string
}

// Notify implements compliance.Notifier.
func (n *Notifier) Notify(_ context.Context, msg compliance.Notification) (compliance.Delivery, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if id, ok := n.keys[msg.IdempotencyKey]; ok {
		return compliance.Delivery{DeliveryID: id}, nil
	}
	if n.keys == nil {
		n.keys = map[string]string{}
	}
	id := fmt.Sprintf("delivery-%d", len(n.sent)+1)
	n.keys[msg.IdempotencyKey] = id
	n.sent = append(n.sent, msg)
	return compliance.Delivery{DeliveryID: id}, nil
}

// Sent returns the notifications delivered, in order.
func (n *Notifier) Sent() []compliance.Notification {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]compliance.Notification(nil), n.sent...)
}

// Assessor decides the applicants listed in Deny against them, everyone
// else in their favour, with the factors the FCHA names.
type Assessor struct {
	Deny map[string]bool
}

// Assess implements compliance.Assessor.
func (a *Assessor) Assess(_ context.Context, req compliance.AssessmentRequest) (compliance.Assessment, error) {
	factors := []string{
		"time elapsed since the offense",
		"age of the applicant at the time of the offense",
		"evidence of rehabilitation",
		"relevance of the findings to the tenancy",
	}
	if a.Deny[req.ApplicantID] {
		return compliance.Assessment{Approved: false, Factors: factors,
			Rationale: fmt.Sprintf("findings %v bear directly on the safety of residents; denial necessary", req.Findings)}, nil
	}
	return compliance.Assessment{Approved: true, Factors: factors,
		Rationale: fmt.Sprintf("findings %v outweighed by rehabilitation and time elapsed", req.Findings)}, nil
}
