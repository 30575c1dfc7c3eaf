module tessera.invalid/placement-gen

go 1.24

require (
	github.com/dchest/siphash v1.2.3
	github.com/google/uuid v1.6.0
)
