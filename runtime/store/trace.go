package store

import "context"

type traceParentKey struct{}

// WithTraceParent returns ctx carrying traceparent, the W3C trace context
// (https://www.w3.org/TR/trace-context/#traceparent-header) of the span
// that starts a run: Start stores it with a run it creates, children the
// run starts take it, and the run's outbox messages carry it, so that the
// run's later sessions and its messages' consumers can link to that span.
// A value that is not of the traceparent's form (version 00, a 32-digit
// trace id, a 16-digit span id and flags, lower-case hexadecimal) is not
// stored. The engine sets it for its Start when one of its middleware
// traces (engine.TraceContext); a program that starts runs with the store
// directly sets it itself.
func WithTraceParent(ctx context.Context, traceparent string) context.Context {
	return context.WithValue(ctx, traceParentKey{}, traceparent)
}

// TraceParent returns the traceparent WithTraceParent put in ctx, "" when
// there is none or it is not of the traceparent's form.
func TraceParent(ctx context.Context) string {
	tp, _ := ctx.Value(traceParentKey{}).(string)
	if !ValidTraceParent(tp) {
		return ""
	}
	return tp
}

// ValidTraceParent reports whether tp has the form of a W3C traceparent
// of version 00: "00-" 32 hexadecimal digits "-" 16 hexadecimal digits
// "-" 2 hexadecimal digits, lower case.
func ValidTraceParent(tp string) bool {
	if len(tp) != 55 || tp[:3] != "00-" || tp[35] != '-' || tp[52] != '-' {
		return false
	}
	for i := 3; i < len(tp); i++ {
		if i == 35 || i == 52 {
			continue
		}
		if c := tp[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
