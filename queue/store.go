package queue

import "github.com/scheduler-run/scheduler/queue/store"

// Store is a storage engine (see store.Engine).
type Store = store.Engine
