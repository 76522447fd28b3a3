// Package natsrelay publishes fsmgen's outbox to NATS JetStream: it is a
// relay.Publisher (package runtime/relay) built on
// github.com/nats-io/nats.go/jetstream. It lives in a module of its own,
// github.com/fsmgen/fsmgen/contrib/nats, so that the NATS client is no
// dependency of the core module.
//
//	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectBufSize(-1))
//	if err != nil { ... }
//	js, err := jetstream.New(nc)
//	if err != nil { ... }
//	if _, err := natsrelay.EnsureStream(ctx, js, "FSMGEN_OUTBOX", natsrelay.DefaultSubjectPrefix); err != nil { ... }
//	pub, err := natsrelay.New(js, natsrelay.Config{Stream: "FSMGEN_OUTBOX"})
//	if err != nil { ... }
//	r, err := relay.New(pool, pub, relay.Config{})
//	if err != nil { ... }
//	err = r.Run(ctx)
//
// # Subjects
//
// A message emitted under topic T is published on Config.SubjectPrefix + T:
// with the default prefix "fsmgen.outbox.", topic "order.shipped" goes to
// "fsmgen.outbox.order.shipped", and a consumer filters on
// "fsmgen.outbox.order.>" or any other subject pattern. A topic is thus a
// dot-separated NATS subject: no empty token, no wildcard (* or >), no
// white space. A message whose subject is not valid fails to publish
// (ErrInvalidSubject, in the row's last_error) as rejected (see Dead
// letters); Config.Subject maps messages to subjects some other way.
//
// # The stream
//
// JetStream stores a message only when a stream holds its subject.
// EnsureStream creates (or updates) a file-backed stream over
// prefix + ">" with a duplicate window of DefaultDuplicates (10 minutes);
// StreamConfig returns that configuration for programs that create their
// streams otherwise (the nats CLI, Terraform): what matters is a stream over
// the subjects and a duplicate window. Config.Stream makes every publish
// check that the message landed in that stream.
//
// # At most once, as consumers see it
//
// Every message carries the Nats-Msg-Id header: Config.MsgIDPrefix and the
// message's relay.Message.DedupID, its run's id and its outbox row's id
// ("RUN/ID"), the same on every try and unique across databases (row ids
// start at 1 in each; run ids are random UUIDs), so that databases that
// publish to one stream within its duplicate window lose nothing. A relay
// that crashes after JetStream stored a message but before its row was
// marked published publishes the row again; JetStream recognises the id
// within the stream's duplicate window, acknowledges without storing it
// twice (PublishAck's ack.Duplicate), and the relay marks the row, and
// records that it was a duplicate: fsmctl outbox status counts such rows
// (duplicates), so that ids shared with another publisher show. Keep the
// window longer than a relay may stay away after a crash.
//
// Messages also carry the headers Fsmgen-Run-Id, Fsmgen-Workflow-Type,
// Fsmgen-Topic, Fsmgen-Outbox-Id and Fsmgen-Created-At, the W3C traceparent
// header when the run was started with tracing (the span that started it:
// relay.Message.TraceParent; extract it with OpenTelemetry's
// propagation.TraceContext and the consumer's spans join the run's trace),
// and the payload as JSON (null for a message emitted without one). A run's messages reach the
// stream in the order the run wrote them (the relay's guarantee).
//
// # While NATS is down
//
// A publish that fails (no connection, a timeout) is a failed try: the
// relay records it on the row and tries again with backoff, and nothing is
// lost. nats.ReconnectBufSize(-1) makes publishes fail at once
// while the connection is down, rather than wait in the client's buffer
// until the relay's publish timeout; nats.MaxReconnects(-1) keeps
// reconnecting for good.
//
// # Dead letters
//
// A message JetStream refuses itself is rejected (Rejected; the error
// matches relay.ErrRejected): no stream holds its subject (no responders),
// it is larger than the server's max_payload, JetStream answered 400 (the
// stream's size limit, a stream other than Config.Stream), or its subject
// is invalid. It is tried again with backoff, since an operator may create
// the stream meanwhile; after relay.Config.DeadLetterAfter rejections in a
// row the relay moves it to the dead letters and publishes its run's next
// messages. fsmctl outbox status counts and lists the dead letters.
//
// # Demo
//
// cmd/outboxdemo (make demo-nats) relays the messages of a few runs through
// a nats-server it starts, drops the first acknowledgement on purpose, and
// prints what a consumer of the stream receives: every message once, each
// run's in order, the dropped one reported a duplicate when published again.
//
// # Tests
//
// The tests start their own nats-server (package natsserver: $NATS_SERVER,
// PATH or /usr/sbin/nats-server; apt-get install nats-server) with -js on a
// free port and a store directory of their own, and a PostgreSQL database
// as runtime/pgtest does; they fail, saying what to install, when either is
// missing.
package natsrelay
