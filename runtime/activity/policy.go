package activity

import (
	"errors"
	"reflect"
	"strings"
	"time"

	"github.com/fsmgen/fsmgen/runtime"
)

// RetryPolicy says how a failing activity is tried again. The wait before try n+1, after try n failed, is
// InitialInterval * BackoffCoefficient^(n-1), capped at MaximumInterval
// (CalculateRetryDelay), then spread by up to ±Jitter of itself to keep
// many clients from retrying in step (a thundering herd). An activity is
// tried at most MaximumAttempts times; an error matching one of
// NonRetryableErrors fails at once.
type RetryPolicy struct {
	// Name is the preset's name, empty for a custom policy.
	Name string
	// InitialInterval is the wait after the first failed try.
	InitialInterval time.Duration
	// BackoffCoefficient multiplies the wait after each further failure;
	// below 1 it counts as 1.
	BackoffCoefficient float64
	// MaximumInterval caps the wait; 0 means no cap.
	MaximumInterval time.Duration
	// MaximumAttempts is the number of tries in all; below 1 it counts as 1.
	MaximumAttempts int
	// NonRetryableErrors names errors that are not retried: an entry
	// matches an error in the chain whose code (runtime.WithCode) equals
	// it, or whose Go type's name does, with or without its package
	// ("CardDeclinedError", "payments.CardDeclinedError",
	// "*payments.CardDeclinedError").
	NonRetryableErrors []string
	// Jitter is the fraction in [0, 1] by which a wait is spread.
	Jitter float64
}

// The named policies. Their numbers are the runtime's presets
// (runtime.RetryValidation and the others), which the .fsm files name with
// retry database and the like, so that an activity and the state that runs
// it retry alike.
var (
	// Validation is never retried: validation is deterministic.
	Validation = FromRuntime(runtime.RetryValidation)
	// Database: 5 attempts, 500 ms doubling (500 ms, 1 s, 2 s, 4 s).
	Database = FromRuntime(runtime.RetryDatabase)
	// ExternalService: 10 attempts, 1 s doubling, capped at a minute.
	ExternalService = FromRuntime(runtime.RetryExternalService)
	// Payment: 3 attempts, careful with payments.
	Payment = FromRuntime(runtime.RetryPayment)
	// Background: 20 attempts over a long period (1 s doubling, capped at an
	// hour: about 15 hours in all).
	Background = FromRuntime(runtime.RetryBackground)
)

// Policies returns the named policies by name: validation, database,
// externalService, payment, background.
func Policies() map[string]RetryPolicy {
	return map[string]RetryPolicy{
		Validation.Name: Validation, Database.Name: Database, ExternalService.Name: ExternalService,
		Payment.Name: Payment, Background.Name: Background,
	}
}

// FromRuntime converts the runtime's policy (a state's) to an activity's.
func FromRuntime(p runtime.RetryPolicy) RetryPolicy {
	return RetryPolicy{
		Name: p.Name, InitialInterval: p.InitialInterval, BackoffCoefficient: p.Coefficient,
		MaximumInterval: p.MaxInterval, MaximumAttempts: p.MaxAttempts,
		NonRetryableErrors: append([]string(nil), p.NonRetryable...), Jitter: p.Jitter,
	}
}

// Runtime converts p to the runtime's policy, for a state or an engine
// that takes one (the Temporal backend's activity options, say).
func (p RetryPolicy) Runtime() runtime.RetryPolicy {
	return runtime.RetryPolicy{
		Name: p.Name, MaxAttempts: p.attempts(), InitialInterval: p.InitialInterval, Coefficient: p.BackoffCoefficient,
		MaxInterval: p.MaximumInterval, Jitter: p.Jitter, NonRetryable: append([]string(nil), p.NonRetryableErrors...),
	}
}

// CreateRetryPolicy returns a custom policy.
// Zero fields take the values of the database policy, except
// NonRetryableErrors and Name.
func CreateRetryPolicy(p RetryPolicy) RetryPolicy {
	if p.InitialInterval <= 0 {
		p.InitialInterval = Database.InitialInterval
	}
	if p.BackoffCoefficient == 0 {
		p.BackoffCoefficient = Database.BackoffCoefficient
	}
	if p.MaximumAttempts == 0 {
		p.MaximumAttempts = Database.MaximumAttempts
	}
	p.Name = ""
	return p
}

func (p RetryPolicy) attempts() int {
	if p.MaximumAttempts < 1 {
		return 1
	}
	return p.MaximumAttempts
}

// CalculateRetryDelay returns the wait before the try that follows failed
// try attempt (from 1), without jitter: InitialInterval *
// BackoffCoefficient^(attempt-1), capped at MaximumInterval. For Database,
// attempts 1, 2, 3 give 500 ms, 1 s, 2 s.
func CalculateRetryDelay(p RetryPolicy, attempt int) time.Duration {
	return p.Runtime().Delay(attempt)
}

// Jittered spreads d by up to ±p.Jitter of itself: u must be uniform in
// [0, 1); u = 0.5 leaves d as it is.
func (p RetryPolicy) Jittered(d time.Duration, u float64) time.Duration {
	return p.Runtime().Jittered(d, u)
}

// Retryable reports whether err, the error of try attempt, may be tried
// again: tries are left and err matches none of NonRetryableErrors.
func (p RetryPolicy) Retryable(err error, attempt int) bool {
	return attempt < p.attempts() && !p.nonRetryable(err)
}

func (p RetryPolicy) nonRetryable(err error) bool {
	if len(p.NonRetryableErrors) == 0 {
		return false
	}
	for e := err; e != nil; {
		var names []string
		if c, ok := e.(*runtime.CodedError); ok {
			names = append(names, c.Code)
		}
		t := reflect.TypeOf(e)
		full := t.String() // "*payments.CardDeclinedError"
		names = append(names, full, strings.TrimPrefix(full, "*"))
		base := strings.TrimPrefix(full, "*")
		if i := strings.LastIndexByte(base, '.'); i >= 0 {
			names = append(names, base[i+1:])
		}
		for _, n := range names {
			for _, want := range p.NonRetryableErrors {
				if n == want {
					return true
				}
			}
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			e = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, inner := range u.Unwrap() {
				if p.nonRetryable(inner) {
					return true
				}
			}
			e = nil
		default:
			e = nil
		}
	}
	return false
}

// ErrNonRetryable marks an error that an activity's policy does not retry;
// the error Execute returns then matches it.
var ErrNonRetryable = errors.New("non-retryable")
