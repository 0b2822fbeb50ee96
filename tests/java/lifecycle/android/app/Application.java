package android.app;

/** A stand-in for Android's Application: one per process, never leaking. */
public class Application {
}
