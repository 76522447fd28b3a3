package runtime_test

import (
	"errors"
	"fmt"
	"time"

	subs "github.com/fsmgen/fsmgen/machines/subscription/subscription"
	"github.com/fsmgen/fsmgen/runtime"
)

// A generated package's Definition is its machine as data: the table the
// store and the database enforce, which tools read without the machine's
// Go code.
func ExampleDefinition() {
	def := subs.Definition()
	if err := def.Validate(); err != nil {
		fmt.Println(err)
	}
	fmt.Println(def.Type, def.Version, def.Initial)
	fmt.Println(def.Accepts("ACTIVE", "Pause"), def.Accepts("PAUSED", "Pause"))
	fmt.Println(def.Allows("PAUSED", "Resume", "CHARGING"))
	fmt.Println(def.Refusal("PAUSED", "Pause", "PAUSED"))
	// Output:
	// subscription 1 ACTIVE
	// true false
	// true
	// no row PAUSED -> PAUSED on "Pause"
}

// A retry policy's waits grow by its coefficient up to its cap; a code it
// lists as non-retryable is not tried again.
func ExampleRetryPolicy() {
	p := runtime.RetryPolicy{
		MaxAttempts:     5,
		InitialInterval: time.Second,
		Coefficient:     2,
		MaxInterval:     5 * time.Second,
		NonRetryable:    []string{"CARD_DECLINED"},
	}
	for n := 1; n < p.MaxAttempts; n++ {
		fmt.Printf("after try %d: wait %v\n", n, p.Delay(n))
	}
	fmt.Println(p.Retryable("TIMEOUT", 1), p.Retryable("CARD_DECLINED", 1), p.Retryable("TIMEOUT", 5))
	// Output:
	// after try 1: wait 1s
	// after try 2: wait 2s
	// after try 3: wait 4s
	// after try 4: wait 5s
	// true false false
}

// A handler gives its error a code, which the run's log records and a
// state's retry policy may list as non-retryable (nonretryable in .fsm).
func ExampleWithCode() {
	err := runtime.WithCode("CARD_DECLINED", errors.New("card declined"))
	wrapped := fmt.Errorf("charge renewal: %w", err)
	fmt.Println(runtime.ErrorCode(wrapped))
	fmt.Println(wrapped)
	// Output:
	// CARD_DECLINED
	// charge renewal: CARD_DECLINED: card declined
}
