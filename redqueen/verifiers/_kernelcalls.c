/* The few kernel calls the sandbox makes that the standard library does not wrap.
 *
 * Without this module the fork server would reach them through ctypes, and every sandboxed
 * child, a copy of that server, would then hold ctypes: foreign functions and raw memory
 * reads that any program can rebuild from the type objects alone, whatever is removed from
 * sys.modules. Each function here does one fixed call. None takes or returns an address, and
 * none reads or writes memory other than the bytes objects it is given, so holding this
 * module gives a program nothing it could not do with the calls themselves, which the
 * seccomp filter refuses once a child is confined.
 *
 * Every failure raises OSError with the call's errno.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#ifdef __linux__
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif

static PyObject *
errno_error(void)
{
    return PyErr_SetFromErrno(PyExc_OSError);
}

static PyObject *
set_pdeathsig(PyObject *self, PyObject *args)
{
    int signal;
    if (!PyArg_ParseTuple(args, "i", &signal))
        return NULL;
    if (prctl(PR_SET_PDEATHSIG, (unsigned long)signal, 0, 0, 0) != 0)
        return errno_error();
    Py_RETURN_NONE;
}

static PyObject *
set_no_new_privs(PyObject *self, PyObject *unused)
{
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return errno_error();
    Py_RETURN_NONE;
}

static PyObject *
get_no_new_privs(PyObject *self, PyObject *unused)
{
    int value = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
    if (value < 0)
        return errno_error();
    return PyLong_FromLong(value);
}

static PyObject *
get_seccomp(PyObject *self, PyObject *unused)
{
    int value = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
    if (value < 0)
        return errno_error();
    return PyLong_FromLong(value);
}

static PyObject *
seccomp_filter(PyObject *self, PyObject *args)
{
    Py_buffer program;
    struct sock_fprog fprog;
    int result;
    if (!PyArg_ParseTuple(args, "y*", &program))
        return NULL;
    if (program.len == 0 || program.len % sizeof(struct sock_filter) != 0 ||
        program.len / (Py_ssize_t)sizeof(struct sock_filter) > USHRT_MAX) {
        PyBuffer_Release(&program);
        PyErr_SetString(PyExc_ValueError, "seccomp program must be whole sock_filter entries");
        return NULL;
    }
    fprog.len = (unsigned short)(program.len / sizeof(struct sock_filter));
    fprog.filter = (struct sock_filter *)program.buf;
    result = prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    if (result == 0)
        result = prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0);
    PyBuffer_Release(&program);
    if (result != 0)
        return errno_error();
    Py_RETURN_NONE;
}

static PyObject *
landlock_abi(PyObject *self, PyObject *unused)
{
    long version = syscall(SYS_landlock_create_ruleset, NULL, 0, 1U /* VERSION */);
    return PyLong_FromLong(version < 0 ? 0 : version);
}

static PyObject *
landlock_create_ruleset(PyObject *self, PyObject *args)
{
    Py_buffer attr;
    long fd;
    if (!PyArg_ParseTuple(args, "y*", &attr))
        return NULL;
    fd = syscall(SYS_landlock_create_ruleset, attr.buf, (size_t)attr.len, 0U);
    PyBuffer_Release(&attr);
    if (fd < 0)
        return errno_error();
    return PyLong_FromLong(fd);
}

static PyObject *
landlock_add_rule(PyObject *self, PyObject *args)
{
    int ruleset_fd, rule_type;
    Py_buffer rule;
    long result;
    if (!PyArg_ParseTuple(args, "iiy*", &ruleset_fd, &rule_type, &rule))
        return NULL;
    /* The kernel reads a fixed-size attribute for each rule type: refuse a shorter buffer. */
    if (rule.len < 12) {
        PyBuffer_Release(&rule);
        PyErr_SetString(PyExc_ValueError, "landlock rule attribute too short");
        return NULL;
    }
    result = syscall(SYS_landlock_add_rule, ruleset_fd, rule_type, rule.buf, 0U);
    PyBuffer_Release(&rule);
    if (result != 0)
        return errno_error();
    Py_RETURN_NONE;
}

static PyObject *
landlock_restrict_self(PyObject *self, PyObject *args)
{
    int ruleset_fd;
    if (!PyArg_ParseTuple(args, "i", &ruleset_fd))
        return NULL;
    if (syscall(SYS_landlock_restrict_self, ruleset_fd, 0U) != 0)
        return errno_error();
    Py_RETURN_NONE;
}

static PyObject *
unshare_namespaces(PyObject *self, PyObject *args)
{
    int flags;
    if (!PyArg_ParseTuple(args, "i", &flags))
        return NULL;
    if (unshare(flags) != 0)
        return errno_error();
    Py_RETURN_NONE;
}

static PyObject *
mount_filesystem(PyObject *self, PyObject *args)
{
    const char *source, *target, *fstype, *data;
    unsigned long flags;
    if (!PyArg_ParseTuple(args, "zszkz", &source, &target, &fstype, &flags, &data))
        return NULL;
    if (mount(source, target, fstype, flags, data) != 0)
        return errno_error();
    Py_RETURN_NONE;
}

static PyObject *
unmount_filesystem(PyObject *self, PyObject *args)
{
    const char *target;
    int flags;
    if (!PyArg_ParseTuple(args, "si", &target, &flags))
        return NULL;
    if (umount2(target, flags) != 0)
        return errno_error();
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"set_pdeathsig", set_pdeathsig, METH_VARARGS, "prctl(PR_SET_PDEATHSIG, signal)."},
    {"set_no_new_privs", set_no_new_privs, METH_NOARGS, "prctl(PR_SET_NO_NEW_PRIVS, 1)."},
    {"get_no_new_privs", get_no_new_privs, METH_NOARGS, "prctl(PR_GET_NO_NEW_PRIVS)."},
    {"get_seccomp", get_seccomp, METH_NOARGS, "prctl(PR_GET_SECCOMP)."},
    {"seccomp_filter", seccomp_filter, METH_VARARGS,
     "Set no_new_privs and load a seccomp-BPF program (bytes of sock_filter entries)."},
    {"landlock_abi", landlock_abi, METH_NOARGS, "The kernel's Landlock ABI version, 0 if none."},
    {"landlock_create_ruleset", landlock_create_ruleset, METH_VARARGS,
     "landlock_create_ruleset(attr bytes) -> ruleset fd."},
    {"landlock_add_rule", landlock_add_rule, METH_VARARGS,
     "landlock_add_rule(ruleset fd, rule type, attribute bytes)."},
    {"landlock_restrict_self", landlock_restrict_self, METH_VARARGS,
     "landlock_restrict_self(ruleset fd)."},
    {"unshare", unshare_namespaces, METH_VARARGS, "unshare(flags)."},
    {"mount", mount_filesystem, METH_VARARGS,
     "mount(source, target, fstype, flags, data); str, or None where C allows NULL."},
    {"umount2", unmount_filesystem, METH_VARARGS, "umount2(target, flags)."},
    {NULL, NULL, 0, NULL},
};
#else
static PyMethodDef methods[] = {{NULL, NULL, 0, NULL}};
#endif

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_kernelcalls",
    "Fixed kernel calls for the sandbox (Linux only; empty elsewhere).", -1, methods,
};

PyMODINIT_FUNC
PyInit__kernelcalls(void)
{
    return PyModule_Create(&module);
}
