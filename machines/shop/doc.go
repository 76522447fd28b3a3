// Package shop is an e-commerce order on the durable runtime: the Order
// machine of shop.fsm (generated into package order), its workflow (a
// warehouse packs the parcel, a payment provider refunds it), and the ways
// a service moves orders on: the typed handle order.Runs, which starts
// orders with a typed Input, fires this machine's events only and reads
// the state typed; the engine's workers, which call the handlers; and a
// machine rebuilt from the store with store.Load, moved through its
// Recorder.
//
//	eng, err := engine.New(store.New(pool), engine.Config{})
//	if err != nil { ... }
//	wf := &shop.Workflow{Warehouse: wh, Payments: psp}
//	if err := eng.Register(ctx, wf.Driver()); err != nil { ... }
//	go eng.Work(ctx)
//
//	orders := order.Runs[shop.Input](eng)
//	started, err := orders.Start(ctx, "order-1042", shop.Input{Items: items, TotalCents: 4200},
//		runtime.Owner{TenantID: "acme", UserID: userID}) // started.Outcome == runtime.StartCreated
//	o, err := orders.Pay(ctx, started.ID, order.Pay{PaymentRef: ref}) // o.State == order.StatePacking
//	o, err = orders.Cancel(ctx, o.ID, userID)                  // refunded first: order.StateRefunding
//
// Whichever way an event is fired, the order's timers and due time are
// those of the state it enters: a paid order is packed at once, whatever
// was left of the payment's twenty seconds; a delivered order waits
// fourteen days for a return, not the three days of its transit.
package shop
