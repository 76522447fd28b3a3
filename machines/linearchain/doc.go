// Package linearchain is a workflow on the linear chain engine
// (runtime/linearchain): order.process (OrderProcess: VALIDATE -> RESERVE
// -> WAIT_PAYMENT -> SHIP -> NOTIFY, waiting for payment.captured), and
// Demo, which the demo (machines/cmd/demo, make demo) runs.
package linearchain
