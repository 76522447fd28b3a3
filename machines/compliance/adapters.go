package compliance

import (
	"context"
	"time"
)

// Application is the workflow's input: the rental application it screens,
// as the specification starts it.
type Application struct {
	ApplicationID  string `json:"applicationId"`
	ApplicantID    string `json:"applicantId"`
	PropertyID     string `json:"propertyId"`
	UnitID         string `json:"unitId"`
	OrganizationID string `json:"organizationId"`
	MarketID       string `json:"marketId"`
}

// Prequalification is the result of the prequalification criteria.
type Prequalification struct {
	Passed   bool     `json:"passed"`
	Reason   string   `json:"reason"`
	Criteria []string `json:"criteria,omitempty"`
}

// Prequalifier checks an application against the prequalification criteria
// (income, occupancy, ...): work on the platform's database.
type Prequalifier interface {
	Prequalify(ctx context.Context, app Application) (Prequalification, error)
}

// ScreeningRequest asks the screening provider for a background check. The
// provider honours IdempotencyKey: the same key returns the same report
// without a second check (or charge).
type ScreeningRequest struct {
	ApplicationID  string    `json:"applicationId"`
	ApplicantID    string    `json:"applicantId"`
	AuthorizedAt   time.Time `json:"authorizedAt"`
	AuthorizedBy   string    `json:"authorizedBy"`
	IdempotencyKey string    `json:"idempotencyKey"`
}

// ScreeningReport is the background check's result.
type ScreeningReport struct {
	ReportID    string   `json:"reportId"`
	AdverseInfo bool     `json:"adverseInfo"`
	Findings    []string `json:"findings"`
}

// ScreeningProvider runs background checks: an external service.
type ScreeningProvider interface {
	Check(ctx context.Context, req ScreeningRequest) (ScreeningReport, error)
}

// Notification is a message to the applicant.
type Notification struct {
	ApplicationID  string `json:"applicationId"`
	ApplicantID    string `json:"applicantId"`
	Kind           string `json:"kind"`
	IdempotencyKey string `json:"idempotencyKey"`
}

// Delivery is the notifier's receipt.
type Delivery struct {
	DeliveryID string `json:"deliveryId"`
}

// Notifier delivers notifications (the conditional offer): an external
// service that honours IdempotencyKey.
type Notifier interface {
	Notify(ctx context.Context, n Notification) (Delivery, error)
}

// AssessmentRequest asks for the individualized assessment of an
// application whose background check found adverse information.
type AssessmentRequest struct {
	ApplicationID string   `json:"applicationId"`
	ApplicantID   string   `json:"applicantId"`
	Findings      []string `json:"findings"`
}

// Assessment is the individualized assessment: the factors weighed (the
// FCHA's: time since the offence, age at the time, evidence of
// rehabilitation, relevance to tenancy, ...), the decision and its
// rationale.
type Assessment struct {
	Approved  bool     `json:"approved"`
	Factors   []string `json:"factors"`
	Rationale string   `json:"rationale"`
}

// Assessor performs individualized assessments from the factors on
// record: work on the platform's database.
type Assessor interface {
	Assess(ctx context.Context, req AssessmentRequest) (Assessment, error)
}

// Adapters are the services the workflow calls.
type Adapters struct {
	Prequalifier Prequalifier
	Screening    ScreeningProvider
	Notifier     Notifier
	Assessor     Assessor
}
