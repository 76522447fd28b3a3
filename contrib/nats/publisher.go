package natsrelay

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fsmgen/fsmgen/runtime/relay"
)

// The package's sentinel errors; match them with errors.Is.
var (
	// ErrInvalidSubject: a message's subject (the prefix and the topic) is
	// not a NATS subject a message can be published on: an empty token
	// ("a..b", a trailing dot), a wildcard token (* or >), or white space.
	ErrInvalidSubject = errors.New("invalid subject")
	// ErrInvalidConfig: New was given a Config that cannot work.
	ErrInvalidConfig = errors.New("invalid config")
)

// The headers a published message carries besides its payload.
const (
	// HeaderMsgID is JetStream's deduplication header (nats.MsgIdHdr):
	// Config.MsgIDPrefix and the message's relay.Message.DedupID, "RUN/ID",
	// unique across databases.
	HeaderMsgID = jetstream.MsgIDHeader
	// HeaderRunID, HeaderType, HeaderTopic and HeaderOutboxID are the run
	// that emitted the message, its workflow type, the message's topic and
	// its outbox row's id; HeaderCreatedAt is when the row was written
	// (RFC 3339, UTC, by the database's clock).
	HeaderRunID     = "Fsmgen-Run-Id"
	HeaderType      = "Fsmgen-Workflow-Type"
	HeaderTopic     = "Fsmgen-Topic"
	HeaderOutboxID  = "Fsmgen-Outbox-Id"
	HeaderCreatedAt = "Fsmgen-Created-At"
	// HeaderTraceParent is the W3C trace context header: the traceparent
	// of the span that started the run (relay.Message.TraceParent), set
	// when the run was started with tracing, so that a consumer extracts
	// it (OpenTelemetry's propagation.TraceContext) and its spans join the
	// run's trace.
	HeaderTraceParent = "traceparent"
)

// DefaultSubjectPrefix is Config.SubjectPrefix's default: topic
// "order.shipped" is published on "fsmgen.outbox.order.shipped".
const DefaultSubjectPrefix = "fsmgen.outbox."

// Config tunes a Publisher. The zero Config publishes topic T on
// DefaultSubjectPrefix + T with the message's DedupID as the message id.
type Config struct {
	// SubjectPrefix is put before a message's topic to make its subject.
	// Default DefaultSubjectPrefix. End it with a dot.
	SubjectPrefix string
	// Subject, when set, maps a message to its subject instead of
	// SubjectPrefix + topic.
	Subject func(relay.Message) string
	// MsgIDPrefix is put before the message's DedupID in the Nats-Msg-Id
	// header. DedupID is unique across databases already (it holds the
	// run's id); a prefix only names the source. Default none.
	MsgIDPrefix string
	// Stream, when set, is the stream the messages must land in: a publish
	// on a subject that another stream, or none, holds fails (JetStream's
	// expected-stream check) instead of going elsewhere.
	Stream string
}

// Publisher publishes outbox messages to NATS JetStream; it is a
// relay.ReceiptPublisher. It is safe for concurrent use. Its errors match
// relay.ErrRejected when JetStream refused the message itself (see
// Rejected), so that the relay moves a message it can never publish to
// the dead letters.
type Publisher struct {
	js  jetstream.JetStream
	cfg Config
}

var _ relay.ReceiptPublisher = (*Publisher)(nil)

// New returns a Publisher on js.
func New(js jetstream.JetStream, cfg Config) (*Publisher, error) {
	if js == nil {
		return nil, fmt.Errorf("natsrelay: %w: no JetStream context", ErrInvalidConfig)
	}
	if cfg.SubjectPrefix == "" {
		cfg.SubjectPrefix = DefaultSubjectPrefix
	}
	if cfg.Subject == nil {
		if err := checkPrefix(cfg.SubjectPrefix); err != nil {
			return nil, fmt.Errorf("natsrelay: %w: subject prefix %q: %w", ErrInvalidConfig, cfg.SubjectPrefix, err)
		}
	}
	return &Publisher{js: js, cfg: cfg}, nil
}

// Subject returns the subject msg is published on.
func (p *Publisher) Subject(msg relay.Message) string {
	if p.cfg.Subject != nil {
		return p.cfg.Subject(msg)
	}
	return p.cfg.SubjectPrefix + msg.Topic
}

// MsgID returns the Nats-Msg-Id msg is published with.
func (p *Publisher) MsgID(msg relay.Message) string {
	return p.cfg.MsgIDPrefix + msg.DedupID()
}

// Publish publishes msg and returns once JetStream has stored it (or
// recognised it as a duplicate of a message it stored under the same id
// within the stream's duplicate window).
func (p *Publisher) Publish(ctx context.Context, msg relay.Message) error {
	_, err := p.PublishAck(ctx, msg)
	return err
}

// PublishReceipt is Publish that says whether JetStream took the message
// as a duplicate; the relay records it.
func (p *Publisher) PublishReceipt(ctx context.Context, msg relay.Message) (relay.Receipt, error) {
	ack, err := p.PublishAck(ctx, msg)
	if err != nil {
		return relay.Receipt{}, err
	}
	return relay.Receipt{Duplicate: ack.Duplicate}, nil
}

// PublishAck is Publish that returns JetStream's acknowledgement:
// ack.Duplicate reports that the stream had the message already.
func (p *Publisher) PublishAck(ctx context.Context, msg relay.Message) (*jetstream.PubAck, error) {
	subject := p.Subject(msg)
	if err := CheckSubject(subject); err != nil {
		return nil, fmt.Errorf("natsrelay: topic %q: %w: %w", msg.Topic, relay.ErrRejected, err)
	}
	m := nats.NewMsg(subject)
	m.Data = msg.Payload
	if m.Data == nil {
		m.Data = []byte("null")
	}
	m.Header.Set(HeaderRunID, msg.RunID)
	m.Header.Set(HeaderType, msg.Type)
	m.Header.Set(HeaderTopic, msg.Topic)
	m.Header.Set(HeaderOutboxID, strconv.FormatInt(msg.ID, 10))
	m.Header.Set(HeaderCreatedAt, msg.CreatedAt.UTC().Format(time.RFC3339Nano))
	m.Header.Set("Content-Type", "application/json")
	if msg.TraceParent != "" {
		m.Header.Set(HeaderTraceParent, msg.TraceParent)
	}
	opts := []jetstream.PublishOpt{jetstream.WithMsgID(p.MsgID(msg))}
	if p.cfg.Stream != "" {
		opts = append(opts, jetstream.WithExpectStream(p.cfg.Stream))
	}
	ack, err := p.js.PublishMsg(ctx, m, opts...)
	if err != nil {
		if Rejected(err) {
			return nil, fmt.Errorf("natsrelay: publish on %s: %w: %w", subject, relay.ErrRejected, err)
		}
		return nil, fmt.Errorf("natsrelay: publish on %s: %w", subject, err)
	}
	return ack, nil
}

// Rejected reports whether err, an error of a JetStream publish, says that
// the message itself was refused, so that publishing it again as it is
// fails again: no stream holds its subject (no responders), it is larger
// than the server's max_payload, or JetStream answered with a 400 error (a
// stream other than Config.Stream holds the subject, the message exceeds
// the stream's size limit). A connection lost, a timeout or a server error
// are not rejections.
func Rejected(err error) bool {
	if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrMaxPayload) {
		return true
	}
	var api *jetstream.APIError
	return errors.As(err, &api) && api.Code == 400
}

// CheckSubject reports whether s is a subject a message can be published
// on; the error matches ErrInvalidSubject.
func CheckSubject(s string) error {
	if s == "" {
		return fmt.Errorf("%w: empty", ErrInvalidSubject)
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return r == ' ' || r == '\t' || r == '\r' || r == '\n' }); i >= 0 {
		return fmt.Errorf("%w: %q has white space", ErrInvalidSubject, s)
	}
	for _, tok := range strings.Split(s, ".") {
		switch tok {
		case "":
			return fmt.Errorf("%w: %q has an empty token", ErrInvalidSubject, s)
		case "*", ">":
			return fmt.Errorf("%w: %q has the wildcard %s", ErrInvalidSubject, s, tok)
		}
	}
	return nil
}

func checkPrefix(prefix string) error {
	if !strings.HasSuffix(prefix, ".") {
		return errors.New("does not end with a dot")
	}
	return CheckSubject(strings.TrimSuffix(prefix, "."))
}

// DefaultDuplicates is the duplicate window StreamConfig sets: a message
// published again within it, under the same Nats-Msg-Id, is stored once.
// It must outlast the time between a publish whose mark was lost and its
// next try: the relay's PublishTimeout + 10s, plus however long no relay
// runs after a crash.
const DefaultDuplicates = 10 * time.Minute

// StreamConfig returns the configuration of a file-backed stream named
// name that holds every subject under prefix (prefix + ">"), with
// DefaultDuplicates as its duplicate window. Change it before creating the
// stream to set retention, replicas or limits.
func StreamConfig(name, prefix string) jetstream.StreamConfig {
	if prefix == "" {
		prefix = DefaultSubjectPrefix
	}
	return jetstream.StreamConfig{
		Name:        name,
		Description: "fsmgen outbox messages under " + prefix,
		Subjects:    []string{prefix + ">"},
		Storage:     jetstream.FileStorage,
		Duplicates:  DefaultDuplicates,
	}
}

// EnsureStream creates the stream StreamConfig(name, prefix) describes, or
// updates the stream of that name to it.
func EnsureStream(ctx context.Context, js jetstream.JetStream, name, prefix string) (jetstream.Stream, error) {
	s, err := js.CreateOrUpdateStream(ctx, StreamConfig(name, prefix))
	if err != nil {
		return nil, fmt.Errorf("natsrelay: create stream %s: %w", name, err)
	}
	return s, nil
}
