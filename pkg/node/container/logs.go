package container

import "path/filepath"

// PodLogsDir is a pod's log directory under the node's pod logs root,
// root/<namespace>_<name>_<uid>; each container logs into a directory of its name below it.
func PodLogsDir(root, namespace, name, uid string) string {
	return filepath.Join(root, namespace+"_"+name+"_"+uid)
}
