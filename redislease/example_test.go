package redislease_test

import (
	"log"

	"github.com/idalloc/idalloc/redislease"
	"github.com/idalloc/idalloc/workerlease"
)

// A process that runs its own snowflake generator leases its worker ID
// from Redis. Open does not dial: with Redis down, each lease call fails
// with workerlease.ErrUnavailable until Redis answers.
func ExampleOpen() {
	st, err := redislease.Open("redis://:password@redis.internal:6379/0", redislease.Options{})
	if err != nil {
		log.Fatal(err) // the dsn does not parse
	}
	defer st.Close()

	svc, err := workerlease.NewService(st, workerlease.Config{Cluster: "orders", MaxWorkerID: 1023})
	if err != nil {
		log.Fatal(err)
	}
	_ = svc // acquire, keep and release the worker ID through svc
}
