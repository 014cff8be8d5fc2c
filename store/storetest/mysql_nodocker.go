//go:build !testcontainers

package storetest

// mysqlInDocker is the build without testcontainers (and its Docker client,
// a large compile every test binary that imports storetest would pay):
// MySQL tests need DSNEnv then.
func mysqlInDocker() (dsn, skip string, err error) {
	return "", DSNEnv + " not set: skipping MySQL tests (or build with -tags testcontainers to start MySQL in Docker)", nil
}
