package docker

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/internal/owner"
)

func init() {
	cluster.RegisterImageProber(cluster.ServersDocker, imageHasProgram)
}

// imageHasProgram reports whether the image ref has program on its PATH:
// a throwaway container (labelled as a run's are, so that a sweep removes
// it should the harness die) runs `command -v PROGRAM`. An image that is
// not on this machine is an error.
func imageHasProgram(ctx context.Context, ref, program string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var opts []client.Opt
	if os.Getenv("DOCKER_HOST") != "" {
		opts = append(opts, client.FromEnv)
	}
	cli, err := client.New(opts...)
	if err != nil {
		return false, fmt.Errorf("docker: %w", err)
	}
	defer cli.Close()
	ownerID, err := owner.ID()
	if err != nil {
		return false, err
	}
	host, _ := os.Hostname()
	created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: ref, Entrypoint: []string{"/bin/sh", "-c", `command -v "$0"`, program},
			Labels: map[string]string{labelRun: "probe", LabelOwner: ownerID, LabelHost: host}},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		return false, fmt.Errorf("docker: %s: %w", ref, err)
	}
	defer func() {
		_, _ = cli.ContainerRemove(context.WithoutCancel(ctx), created.ID, client.ContainerRemoveOptions{Force: true})
	}()
	if _, err := cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		return false, fmt.Errorf("docker: %s: %w", ref, err)
	}
	w := cli.ContainerWait(ctx, created.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case r := <-w.Result:
		return r.StatusCode == 0, nil
	case err := <-w.Error:
		return false, fmt.Errorf("docker: %s: %w", ref, err)
	}
}
