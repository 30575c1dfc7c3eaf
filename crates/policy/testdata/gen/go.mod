module tessera.invalid/policy/testdata/gen

go 1.24

require github.com/minio/pkg/v3 v3.1.3

require (
	github.com/goccy/go-json v0.10.5 // indirect
	github.com/minio/minio-go/v7 v7.0.88 // indirect
)
