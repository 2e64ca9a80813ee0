// A hot Java method for recordings of JIT code (issue 39): leafHot does the work, callerHot
// calls it; runs for args[0] seconds (default 2).
public class Hot {
  static double leafHot(int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += Math.sqrt(i) * 1.0001;
    return s;
  }

  static double callerHot(int n) {
    return leafHot(n) + 1;
  }

  public static void main(String[] args) {
    long end = System.nanoTime() + (long) (Double.parseDouble(args.length > 0 ? args[0] : "2") * 1e9);
    double total = 0;
    while (System.nanoTime() < end) total += callerHot(200000);
    System.out.println(total > 0 ? "done" : "never");
  }
}
